"""Migrations of the django_skipqueue app (the jobs, workers, pauses and archive tables)."""
