"""Migrations of the reservations app (skipqueue_reservations).

Must not import the models or any module of the package: a migration describes the schema of
its time.
"""
