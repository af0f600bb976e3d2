"""What the checks share: running workers the way a reader would, from the project's directory."""

import subprocess
import sys
import time

RUNWORKERS = [sys.executable, "manage.py", "runworkers"]


def burst(*options: str) -> str:
    """Run ``runworkers --burst`` until nothing is ready; return its output."""
    command = [*RUNWORKERS, "--burst", "--processes", "1", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def start_burst(*options: str) -> subprocess.Popen[str]:
    """Start ``runworkers --burst`` in the background, for a check that acts while a job runs."""
    command = [*RUNWORKERS, "--burst", "--processes", "1", *options]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    return output


def wait_until(condition, timeout: float = 30, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.1)


class Abandoned(Exception):
    """Raised after place_order, inside the caller's transaction, to roll it all back."""


def place_orders() -> tuple:
    """Place the orders the outbox pages follow: ada's twice (a retried request finds the same
    order), grace's once, and linus's inside a transaction that rolls back. Return the two
    orders that committed, ada's first."""
    from decimal import Decimal

    from django.db import transaction
    from orders.models import Cart
    from orders.services import place_order

    ada = Cart.objects.create(customer="ada", total=Decimal("12.50"))
    grace = Cart.objects.create(customer="grace", total=Decimal("7.00"))
    first = place_order(ada)
    assert place_order(ada) == first, "a retried request must find the same order"
    second = place_order(grace)
    try:
        with transaction.atomic():
            place_order(Cart.objects.create(customer="linus", total=Decimal("3.00")))
            raise Abandoned
    except Abandoned:
        pass
    return first, second
