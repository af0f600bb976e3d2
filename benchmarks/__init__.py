"""The benchmark suite: django-skipqueue measured side by side with its peers.

Run every scenario and write docs/benchmarks.md with ``python -m benchmarks run``
(``--quick`` for a smoke run). See benchmarks/README.md.
"""
