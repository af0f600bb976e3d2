"""Maintenance: what keeps the jobs table moving and small, run on timers.

Owns the maintenance loop (``loop.py``, run by the supervisor or ``skipqueue_reap``), reaping
expired leases (``reap.py``), promoting due jobs (``promote.py``), purging finished jobs in
chunks (``purge.py`` with its options, report, archive and replica checks) and pruning the
bookkeeping tables (``prune.py``).

Must not import ``worker``, ``admin`` or ``management``: maintenance runs in a supervisor, in a
command or in a test, and never needs a worker to exist.
"""
