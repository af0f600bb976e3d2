"""The invariants of reservation pools, read back from the database after a run.

For every pool: free + held + sold = stock (restocks minus retirements), the ledger's sum is the
number of free units, every held unit belongs to a live hold that lists it, no unit is held or
sold twice, every reservation has the ledger entries of its life, and no hold outlived its time.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Sum

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.reservations.models import HoldState, LedgerEntry, Pool, Reservation, Unit

#: Ledger entries a reservation has, by its state: reason -> sign of delta x quantity.
ENTRIES = {
    HoldState.HELD: {"hold": -1},
    HoldState.CONFIRMED: {"hold": -1, "sale": 0},
    HoldState.RELEASED: {"hold": -1, "release": 1},
    HoldState.EXPIRED: {"hold": -1, "expiry": 1},
}


@dataclass
class Audit:
    problems: list[str] = field(default_factory=list)
    states: Counter = field(default_factory=Counter)
    pools: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)

    def fail(self, message: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(message)


def audit(using: str = "default") -> Audit:
    """Check every invariant; return what was found (``problems`` empty when all hold)."""
    result = Audit()
    holds = list(Reservation.objects.using(using).all())
    units = list(Unit.objects.using(using).values_list("item_id", "location_id", "unit_seq",
                                                      "reserved_by"))  # fmt: skip
    result.states = Counter(hold.state for hold in holds)
    _check_pools(using, holds, units, result)
    _check_units(holds, units, result)
    _check_ledger_per_hold(using, holds, result)
    now = read_db_now(using)
    for hold in holds:
        if hold.state == HoldState.HELD and hold.expires_at <= now:
            result.fail(f"{hold} is still held after its expiry {hold.expires_at}")
    return result


def _check_pools(using: str, holds: list, units: list, result: Audit) -> None:
    counts: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for item, location, _seq, reserved_by in units:
        counts[item, location]["held" if reserved_by else "free"] += 1
    for hold in holds:
        if hold.state == HoldState.CONFIRMED:
            counts[hold.item_id, hold.location_id]["sold"] += hold.quantity
    sums = LedgerEntry.objects.using(using).values_list("item_id", "location_id", "reason")
    for item, location, reason, total in sums.annotate(total=Sum("delta")):
        counts[item, location][f"ledger_{reason}"] += total
    rows = Pool.objects.using(using).values_list("item_id", "location_id", "stock")
    registry = {(item, location): stock for item, location, stock in rows}
    for pool, c in counts.items():
        stock = c["ledger_restock"] + c["ledger_retire"]
        if registry.get(pool) != stock:
            result.fail(f"pool {pool}: its registry says stock={registry.get(pool)}, "
                        f"the ledger {stock}")  # fmt: skip
        ledger = sum(v for k, v in c.items() if k.startswith("ledger_"))
        result.pools[pool] = {**c, "stock": stock}
        if c["free"] + c["held"] + c["sold"] != stock:
            result.fail(f"pool {pool}: free+held+sold={c['free']}+{c['held']}+{c['sold']} "
                        f"but stock={stock}")  # fmt: skip
        if ledger != c["free"]:
            result.fail(f"pool {pool}: ledger sums to {ledger}, free units are {c['free']}")


def _check_units(holds: list, units: list, result: Audit) -> None:
    by_id = {hold.pk: hold for hold in holds}
    present = {(i, loc, seq): by for i, loc, seq, by in units}
    owners: dict[tuple[int, int, int], int] = {}
    for hold in holds:
        if len(hold.unit_seqs) != hold.quantity or len(set(hold.unit_seqs)) != hold.quantity:
            result.fail(f"{hold} lists units {hold.unit_seqs}")
        for seq in hold.unit_seqs:
            key = (hold.item_id, hold.location_id, seq)
            if hold.state == HoldState.HELD and present.get(key) != hold.pk:
                result.fail(f"{hold} lost unit {key}: now {present.get(key, 'gone')}")
            if hold.state == HoldState.CONFIRMED:
                if key in present:
                    result.fail(f"{hold} sold unit {key}, still in the pool")
                if key in owners:
                    result.fail(f"unit {key} sold to {owners[key]} and {hold.pk}")
                owners[key] = hold.pk
    for key, reserved_by in present.items():
        if reserved_by is None:
            continue
        hold = by_id.get(reserved_by)
        if hold is None or hold.state != HoldState.HELD or key[2] not in hold.unit_seqs:
            result.fail(f"unit {key} held by {reserved_by}, which does not hold it")


def _check_ledger_per_hold(using: str, holds: list, result: Audit) -> None:
    entries: dict[int, list[tuple[str, int]]] = defaultdict(list)
    rows = LedgerEntry.objects.using(using).filter(reservation_id__isnull=False)
    for reservation_id, reason, delta in rows.values_list("reservation_id", "reason", "delta"):
        entries[reservation_id].append((reason, delta))
    for hold in holds:
        expected = sorted((r, sign * hold.quantity) for r, sign in ENTRIES[hold.state].items())
        found = sorted(entries.pop(hold.pk, []))
        if found != expected:
            result.fail(f"{hold}: ledger {found} != {expected}")
    if entries:
        result.fail(f"ledger entries of reservations that do not exist: {sorted(entries)[:10]}")
