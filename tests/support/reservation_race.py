"""One side of a reservation race: a process that reserves on a signal and says what it got.

``python -m tests.support.reservation_race ITEM QUANTITY [WAIT]`` (DJANGO_SETTINGS_MODULE and
DATABASE_URL from the environment) sets Django up (``SKIPQUEUE_RESERVATION_LOCKED_WAIT`` set to
WAIT seconds when given), prints ``ready``, then for each line
``<start> <delay>`` it reads: sleeps until ``time.time()`` reaches ``start`` plus ``delay``
seconds, calls ``reserve(ITEM, 1, QUANTITY)``, releases what it got, and prints ``held MS`` or
``refused MS`` (the call's milliseconds). Both racers read the same ``start``: their calls begin
within a few hundred microseconds of the delay between them, round after round.
"""

from __future__ import annotations

import sys
import time

import django


def main() -> None:
    django.setup()
    from django_skipqueue import reservations
    from django_skipqueue.exceptions import InsufficientStock

    item, quantity = int(sys.argv[1]), int(sys.argv[2])
    if len(sys.argv) > 3:
        from django.test import override_settings

        override_settings(SKIPQUEUE_RESERVATION_LOCKED_WAIT=float(sys.argv[3])).enable()
    print("ready", flush=True)
    for line in sys.stdin:
        start, delay = (float(word) for word in line.split())
        _sleep_until(start + delay)
        began = time.perf_counter()
        try:
            hold = reservations.reserve(item, 1, quantity, holder="racer", ttl=60)
        except InsufficientStock:
            print(f"refused {(time.perf_counter() - began) * 1000:.1f}", flush=True)
            continue
        took = (time.perf_counter() - began) * 1000
        reservations.release(hold)
        print(f"held {took:.1f}", flush=True)


def _sleep_until(moment: float) -> None:
    """Sleep to just before ``moment``, then spin: a plain sleep overshoots by a millisecond."""
    left = moment - time.time()
    if left > 0.002:
        time.sleep(left - 0.002)
    while time.time() < moment:
        pass


if __name__ == "__main__":
    main()
