"""The outbox's manage.py commands: ``skipqueue_relay``.

Must not import the job queue's ``worker``, ``maintenance`` or ``admin``.
"""
