"""Migrations of the reservations app (skipqueue_reservations)."""
