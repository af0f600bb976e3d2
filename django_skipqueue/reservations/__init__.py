"""Reservation pools: hold, confirm and release units with their ledger entry in one transaction.

Add ``"django_skipqueue.reservations"`` to INSTALLED_APPS. The API is importable from here;
it loads lazily because models cannot be imported while Django loads the apps.

Imports of the core only ``apps`` (its installed check), ``conf``, ``exceptions``, ``db``,
``admin.readonly`` and the commands' argument types; never the job queue's ``worker``, the job
admin's other modules or job models. The maintenance loop runs its sweep through a hook it does
not import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django_skipqueue.reservations.api import (
        available,
        confirm,
        release,
        reserve,
        restock,
        retire,
    )

__all__ = ["available", "confirm", "release", "reserve", "restock", "retire"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from django_skipqueue.reservations import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
