"""Recurring tasks: cron or interval schedules, each tick enqueued exactly once.

Add ``"django_skipqueue.scheduling"`` to INSTALLED_APPS next to ``django_skipqueue``; every
``runworkers`` supervisor then runs the scheduler in its maintenance loop. Declare schedules
in SKIPQUEUE_SCHEDULES or create them in the admin.
"""
