"""Recurring tasks: cron or interval schedules, each tick enqueued exactly once.

Add ``"django_skipqueue.scheduling"`` to INSTALLED_APPS next to ``django_skipqueue``; every
``runworkers`` supervisor then runs the scheduler in its maintenance loop. Declare schedules
in SKIPQUEUE_SCHEDULES or create them in the admin.

Imports of the core only ``apps``, ``conf``, ``checks``, ``exceptions``, ``durations``,
``payload``, ``db``, ``admin.readonly`` and the runner ids of ``maintenance``; never the
``worker`` loop or the job admin's other modules. The core imports nothing of it but its
figures for ``skipqueue_status`` and ``skipqueue_health`` (status.py).
"""
