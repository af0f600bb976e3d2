"""The outbox's manage.py commands: ``skipqueue_relay``."""
