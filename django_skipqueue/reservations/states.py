"""The states of a hold and the reasons of the ledger, by name, and which ending writes which.

A leaf, like the job's ``django_skipqueue.states``: it imports no model (the models import it),
so the statements, the sweep, the admin and the exporter speak of a hold's state through the
names here and never spell one as a literal. A hold is ``held`` from its insert on and ends once,
in one of three states; each ending writes the ledger entry its reason names.
"""

from __future__ import annotations

from django.db import models


class HoldState(models.TextChoices):
    # Inserted so by reserve(): its units are marked, and can still be confirmed or given back.
    HELD = "held"
    # confirm(): the units left the pool (sold); a confirmed hold never changes again.
    CONFIRMED = "confirmed"
    # release(), or the admin's action: the units went back to the pool before the expiry.
    RELEASED = "released"
    # The sweep, after expires_at: the units went back to the pool.
    EXPIRED = "expired"


class LedgerReason(models.TextChoices):
    RESTOCK = "restock"
    RETIRE = "retire"
    HOLD = "hold"
    RELEASE = "release"
    EXPIRY = "expiry"
    SALE = "sale"


#: The states a hold ends in; none of them is ever left.
ENDED_STATES = (HoldState.CONFIRMED, HoldState.RELEASED, HoldState.EXPIRED)
#: The ledger reason each ending writes (a sale moves no free unit: its delta is 0).
ENDING_REASONS = {
    HoldState.CONFIRMED: LedgerReason.SALE,
    HoldState.RELEASED: LedgerReason.RELEASE,
    HoldState.EXPIRED: LedgerReason.EXPIRY,
}
#: Endings that give the hold's units back to the pool (the others sell them).
RETURNING_STATES = (HoldState.RELEASED, HoldState.EXPIRED)
