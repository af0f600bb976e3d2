"""The documented import path of :func:`pause` and :func:`resume`.

They live in :mod:`django_skipqueue.queues`, beside the rest of what a backend's queues are
(their database, their names, the cached list of paused ones the claim reads); this path
stays for code that imports them from here.
"""

from django_skipqueue.queues import forget, pause, paused_queues, resume, unpaused

__all__ = ["forget", "pause", "paused_queues", "resume", "unpaused"]
