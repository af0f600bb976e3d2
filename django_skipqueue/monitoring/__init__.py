"""Monitoring: the figures that status, health and the admin dashboard read.

Owns the per-process counters and histograms (``metrics.py``), the queue figures
(``stats.py``), the database server's own health (``dbhealth.py``) and the health checks
(``health.py``). Everything here reads; only the
heartbeat writes what ``metrics.py`` counts.

Must not import ``worker``, ``maintenance``, ``admin`` or ``management``: a web process or a
health probe imports this without running any of them.
"""
