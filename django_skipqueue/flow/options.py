"""The flow options of a task, checked at ``@task`` time and turned into a key per call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django_skipqueue.compat import Task
from django_skipqueue.exceptions import InvalidTaskOption

#: Longest stored key (the column's length); a longer key keeps its head and ends with a hash.
KEY_LENGTH = 191
#: What an ordered key does once one of its jobs failed for good.
ON_FAILURE = ("skip", "block")


@dataclass(frozen=True)
class Flow:
    """What one call's job waits for: its key's limit, order and rate."""

    key: str
    limit: int | None
    ordered: bool
    on_failure: str
    rate: int | None
    period: float | None


def has_flow(task: Task) -> bool:
    return (
        getattr(task, "concurrency_limit", None) is not None
        or getattr(task, "rate_limit", None) is not None
        or bool(getattr(task, "ordered", False))
    )


def flow_of(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Flow | None:
    """Return the flow of this call, or None for a task without flow options."""
    if not has_flow(task):
        return None
    ordered = bool(getattr(task, "ordered", False))
    # Checked at enqueue only: the worker rebuilds a retried job's task with its run_after.
    if ordered and task.run_after is not None:
        raise InvalidTaskOption(
            "An ordered task runs its key's jobs in enqueue order: a run_after would let a "
            "later job pass or hold up the key; enqueue it when it is due instead."
        )
    limit = getattr(task, "concurrency_limit", None)
    if ordered:
        limit = 1
    rate = getattr(task, "rate_limit", None)
    return Flow(
        key=_key(task, args, kwargs),
        limit=limit,
        ordered=ordered,
        on_failure=getattr(task, "ordered_failure", None) or "skip",
        rate=None if rate is None else int(rate[0]),
        period=None if rate is None else float(rate[1]),
    )


def _key(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The task's path, then the value of its concurrency_key for this call (if any)."""
    from django_skipqueue.tasks import derived_key

    if getattr(task, "concurrency_key", None) is None:
        return task.module_path[:KEY_LENGTH]
    return derived_key(task, "concurrency_key", args, kwargs)


def check_flow_options(task: Task) -> None:
    """Refuse flow options that are wrong alone or together (InvalidTaskOption)."""
    from django_skipqueue.tasks import check_key_template

    spec = getattr(task, "concurrency_key", None)
    limit = getattr(task, "concurrency_limit", None)
    ordered = getattr(task, "ordered", False)
    on_failure = getattr(task, "ordered_failure", None)
    rate = getattr(task, "rate_limit", None)
    if not isinstance(ordered, bool):
        raise InvalidTaskOption(f"ordered must be True or False, not {ordered!r}.")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1_000_000
    ):
        raise InvalidTaskOption(
            f"concurrency_limit must be a whole number from 1 to 1000000, not {limit!r}."
        )
    if ordered and limit not in (None, 1):
        raise InvalidTaskOption(
            f"ordered runs a key's jobs one at a time: concurrency_limit must be 1 or unset, "
            f"not {limit!r}."
        )
    if on_failure is not None and (not ordered or on_failure not in ON_FAILURE):
        raise InvalidTaskOption(
            f"ordered_failure must be 'skip' or 'block', with ordered=True; not {on_failure!r}."
        )
    if rate is not None:
        _check_rate(rate)
    if spec is not None and not has_flow(task):
        raise InvalidTaskOption(
            "concurrency_key needs a concurrency_limit, ordered=True or a rate_limit: "
            "alone it limits nothing."
        )
    check_key_template(task, "concurrency_key")


def _check_rate(rate: Any) -> None:
    ok = (
        isinstance(rate, tuple | list)
        and len(rate) == 2
        and isinstance(rate[0], int)
        and not isinstance(rate[0], bool)
        and rate[0] >= 1
        and isinstance(rate[1], int | float)
        and not isinstance(rate[1], bool)
        and 0.01 <= rate[1] <= 86_400
    )
    if not ok:
        raise InvalidTaskOption(
            "rate_limit must be (starts, seconds): a whole number >= 1 and a period from "
            f"0.01 to 86400 seconds, not {rate!r}."
        )
