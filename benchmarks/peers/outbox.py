"""The outbox's hot paths (scenarios/outbox_ab): one topic, every relay setting at its default.

``outbox_ab`` (and ``ab``) copy this module into each side's worktree, so both sides of an
A/B run the same settings whatever their commit's ``benchmarks`` holds.
"""

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_skipqueue", "django_skipqueue.outbox"]
TASKS = {"default": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}}
# None: the topic goes to the exchange of its own name, declared (with a bound queue) by the
# benchmark; the relay's batch, depth per key and partitions are the defaults.
SKIPQUEUE_OUTBOX_TOPICS = {"orders": None}
