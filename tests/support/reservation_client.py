"""Client processes for the reservation tests: reserve, confirm and release at random.

``python -m tests.support.reservation_client`` (DJANGO_SETTINGS_MODULE and DATABASE_URL from the
environment) sets Django up once, prints ``ready``, then forks a client per line it reads:
``<seed> <until> <log> [stall]``, printing each client's pid. Forking spares every client the
seconds of CPU that starting Django costs on a busy machine, so clients can be killed and
replaced often. A client stops at ``until`` (``time.time()``) and writes each line of its log
once the call it records has returned: ``reserved ID QTY``, ``confirmed ID QTY``, ``released
ID``, and ``done`` at the end. A ``stall`` client makes one reservation inside an outer
transaction, logs ``stalled ID 1`` and sleeps there, uncommitted, until it is killed.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import time
import traceback

import django

POOLS = [(1, 1), (2, 1), (3, 7)]


def main() -> None:
    django.setup()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        seed, until, log, *stall = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                os._exit(run_client(int(seed), float(until), log, stall=bool(stall)))
            except BaseException:
                traceback.print_exc()
                os._exit(1)
        print(pid, flush=True)


def run_client(seed: int, until: float, log_path: str, *, stall: bool) -> int:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    with open(log_path, "a", buffering=1) as log:
        client = Client(POOLS, random.Random(seed), log)
        if stall:
            client.stall()
        client.run(until)
        log.write("done\n")
    return 0


class Client:
    def __init__(self, pools: list[tuple[int, ...]], rng: random.Random, log) -> None:
        from django_skipqueue import reservations

        self.api, self.pools, self.rng, self.log = reservations, pools, rng, log
        self.holds: list[tuple[int, int]] = []

    def run(self, deadline: float) -> None:
        from django_skipqueue.exceptions import ReservationError

        steps = [self.reserve] * 5 + [self.confirm] * 3 + [self.release] * 2 + [self.restock]
        while time.time() < deadline:
            with contextlib.suppress(ReservationError):
                self.rng.choice(steps)()

    def reserve(self) -> None:
        item, location = self.rng.choice(self.pools)
        quantity = self.rng.randint(1, 3)
        ttl = self.rng.choice([0.2, 0.5, 1.0, 3.0])
        hold = self.api.reserve(item, location, quantity, holder=f"pid-{os.getpid()}", ttl=ttl)
        self.holds.append((hold.pk, quantity))
        self.log.write(f"reserved {hold.pk} {quantity}\n")

    def confirm(self) -> None:
        if self.holds:
            pk, quantity = self.holds.pop(self.rng.randrange(len(self.holds)))
            self.api.confirm(pk)
            self.log.write(f"confirmed {pk} {quantity}\n")

    def release(self) -> None:
        if self.holds:
            pk, _quantity = self.holds.pop(self.rng.randrange(len(self.holds)))
            self.api.release(pk)
            self.log.write(f"released {pk}\n")

    def restock(self) -> None:
        item, location = self.rng.choice(self.pools)
        if self.api.available(item, location) < 10:
            self.api.restock(item, location, self.rng.randint(5, 15), reference="refill")

    def stall(self) -> None:
        """Reserve inside an outer transaction and wait there to be killed, uncommitted."""
        from django.db import transaction

        item, location = self.pools[0]
        with transaction.atomic():
            hold = self.api.reserve(item, location, 1, holder="staller", ttl=60)
            self.log.write(f"stalled {hold.pk} 1\n")
            time.sleep(600)
        raise SystemExit("not killed")


if __name__ == "__main__":
    main()
