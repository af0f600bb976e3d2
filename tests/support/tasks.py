"""Tasks used by the test suite (module-level, as django.tasks requires)."""

from __future__ import annotations

from django_skipqueue.compat import TaskContext
from django_skipqueue.tasks import task


@task
def noop() -> None:
    """Do nothing: measures the queue, not the task."""


@task(priority=10)
def echo(*args: object, **kwargs: object) -> dict[str, object]:
    return {"args": list(args), "kwargs": kwargs}


@task(max_attempts=1)
def explode(message: str) -> None:
    raise ValueError(message)


@task(takes_context=True)
def whoami(context: TaskContext) -> dict[str, object]:
    return {"id": context.task_result.id, "attempt": context.attempt}


@task
async def async_double(value: int) -> int:
    return value * 2


not_a_task = print


# Uniqueness from the arguments (issue 20).


@task(unique_key="account-{account_id}")
def sync_account(account_id: int, full: bool = False) -> None:
    """One waiting, running or succeeded job per account."""


def region_key(region: str, *, day: str) -> str:
    return f"{region.lower()}/{day}"


@task(unique_key=region_key)
def daily_report(region: str, *, day: str) -> None:
    """Its key from a callable: one report per region and day, whatever the case of region."""


@task(unique_key="search-{user_id}", unique_replace=("args", "run_after"))
def reindex_user(user_id: int, fields: list[str]) -> None:
    """Debounced: a new call replaces the waiting job's arguments and run time."""


@task(unique_key="import-{name}", unique_while=("scheduled", "ready"))
def import_feed(name: str) -> None:
    """Only a waiting job blocks: one may wait while another runs."""


# Flow control (issue 18).


@task(concurrency_key="customer:{customer_id}", concurrency_limit=1)
def export_for(customer_id: int) -> None:
    """One export per customer at a time."""


@task(concurrency_key="customer:{customer_id}", concurrency_limit=1,
      unique_key="refresh-{customer_id}-{part}", unique_replace=("args", "run_after"))  # fmt: skip
def refresh_for(customer_id: int, part: str, version: int) -> None:
    """Debounced per customer and part; one refresh per customer at a time."""


@task(concurrency_key="customer:{customer_id}", concurrency_limit=1,
      unique_key="{customer_id}", unique_while=("scheduled", "ready"))  # fmt: skip
def export_waiting_once(customer_id: int) -> None:
    """One export per customer at a time, and at most one waiting behind it."""


@task(concurrency_key="account:{account}", ordered=True, max_attempts=3)
def apply_event(account: str, number: int) -> None:
    """An account's events, one at a time in enqueue order."""


@task(rate_limit=(2, 60.0))
def call_api(n: int) -> None:
    """At most two starts a minute, for the whole task."""


@task(concurrency_key="api:{api}", rate_limit=(1, 3600.0), retry_backoff=0, max_attempts=5)
def call_hourly(api: str) -> None:
    """One start an hour per API; a failed attempt is retried at once (no backoff)."""


@task(concurrency_key="api:{api}", rate_limit=(1, 1.0), retry_backoff=0, max_attempts=5)
def call_each_second(api: str) -> None:
    """One start a second per API; a lost attempt is retried at once (no backoff)."""


@task(concurrency_key="api:{api}", ordered=True, rate_limit=(1, 3600.0), retry_backoff=0,
      max_attempts=5)  # fmt: skip
def sync_hourly(api: str) -> None:
    """One at a time in enqueue order and one start an hour per API; a failed attempt is
    retried at once, keeping the key's slot."""


@task(concurrency_key="api:{api}", ordered=True, rate_limit=(1, 1.0), retry_backoff=0,
      max_attempts=5)  # fmt: skip
def sync_each_second(api: str) -> None:
    """One at a time in enqueue order and one start a second per API; retried at once."""
