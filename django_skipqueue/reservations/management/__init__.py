"""The reservations app's manage.py commands: ``skipqueue_release_expired``.

Must not import the job queue's ``worker``, ``maintenance`` or ``admin``.
"""
