"""The scheduling app's manage.py commands: ``skipqueue_scheduler``."""
