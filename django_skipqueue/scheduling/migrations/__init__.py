"""Migrations of the scheduling app (the schedules and their ticks).

Must not import the models or any module of the package: a migration describes the schema of
its time.
"""
