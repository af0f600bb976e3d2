"""The reservations app's manage.py commands: ``skipqueue_release_expired``."""
