"""Migrations of the outbox app (skipqueue_outbox).

Must not import the models or any module of the package but ``db.clock``'s expressions (the
columns' database defaults), which only write SQL.
"""
