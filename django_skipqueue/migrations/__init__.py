"""Migrations of the django_skipqueue app (the jobs, workers, pauses and archive tables).

Must not import the package's models or any module of it: a migration describes the schema
of its time, and a model that changes later must not change what it does.
"""
