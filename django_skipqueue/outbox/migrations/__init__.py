"""Migrations of the outbox app (skipqueue_outbox)."""
