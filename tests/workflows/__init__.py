"""Batches and chains (django_skipqueue.workflows)."""
