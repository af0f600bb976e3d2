"""Tasks the checks enqueue to watch an option or a worker behave.

``record`` appends its label to ``ran.txt``, so a check sees which jobs ran and in what order;
``sync_stock`` and ``sync_prices`` always fail, as the retries sample's task does when its
service is down.
"""

import time
from pathlib import Path

from django.conf import settings

from django_skipqueue.tasks import task


@task
def record(label: str) -> str:
    with (Path(settings.BASE_DIR) / "ran.txt").open("a") as file:
        file.write(f"{label}\n")
    return label


@task
def sync_stock(sku: str) -> None:
    raise ConnectionError(f"the stock service did not answer for {sku}")


@task(retry_backoff=40)
def sync_prices(sku: str) -> None:
    raise ConnectionError(f"the price service did not answer for {sku}")


@task
def nap(seconds: float) -> None:
    time.sleep(seconds)


@task
def ping(number: int) -> int:
    """A job for a page that only watches jobs go by (Prometheus's figures)."""
    return number


def ran() -> list[str]:
    path = Path(settings.BASE_DIR) / "ran.txt"
    return path.read_text().split() if path.exists() else []
