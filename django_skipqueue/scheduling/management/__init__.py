"""The scheduling app's manage.py commands: ``skipqueue_scheduler``.

Must not import the job queue's ``worker`` loop or ``admin``.
"""
