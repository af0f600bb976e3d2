"""One settings module per system, so that no two systems' apps or migrations meet.

Every system gets its own database (``BENCH_DB``) on the same server; Celery uses the
local Redis. The peers' packages live in their own virtualenv (see ``venv.py``).
"""
