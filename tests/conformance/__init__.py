"""Django's own tests of the Tasks framework, run against SkipQueueBackend.

See scripts/conformance.sh and docs/reference/conformance.md.
"""
