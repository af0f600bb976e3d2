"""Typed access to the SKIPQUEUE_* settings, each default declared once and read lazily."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from django_skipqueue.durations import parse_duration

PREFIX = "SKIPQUEUE_"
#: Annotations of the settings that are seconds: each also takes a duration string.
SECONDS = frozenset({"float", "float | None"})


@dataclass(frozen=True, slots=True)
class SkipQueueSettings:
    """Every SKIPQUEUE_* setting with its default (the field name without the prefix)."""

    #: Attempts a job gets before it ends ``failed`` (a lost lease spends one too).
    MAX_ATTEMPTS: int = 5
    #: Seconds a claim is leased for; workers renew it while the job runs.
    LEASE_SECONDS: float = 60.0
    #: Base of the exponential retry backoff, in seconds.
    RETRY_BACKOFF: float = 2.0
    #: Upper bound of one retry delay, in seconds.
    RETRY_BACKOFF_MAX: float = 3600.0
    #: Times a job may raise Snooze before it fails with SnoozeLimitReached (task's max_snoozes).
    MAX_SNOOZES: int = 100
    #: Largest accepted JSON payload (args and kwargs together), in bytes.
    MAX_PAYLOAD_BYTES: int = 256 * 1024
    #: Largest JSON return value a task may store, in bytes; a larger one fails its job with
    #: ResultTooLarge (not retried). Kept well under the server's max_allowed_packet.
    MAX_RESULT_BYTES: int = 1024 * 1024
    #: Longest traceback stored per failed attempt, in characters (the middle is elided).
    MAX_TRACEBACK_CHARS: int = 20_000

    #: Modules or packages (dotted names) a stored task path may import besides the packages
    #: of installed apps and the settings module's top-level package (see context.resolve_task).
    TASK_MODULES: tuple[str, ...] = ()

    # Workers (runworkers).
    #: Seconds between heartbeats (lease renewal, workers table); shorter for short leases.
    HEARTBEAT_SECONDS: float = 5.0
    #: Longest pause per queue between two claim rounds of an idle worker, in seconds:
    #: an idle worker makes at most about one claim query per this many seconds.
    IDLE_POLL_SECONDS: float = 1.0
    #: Send a wake-up datagram to idle workers after an enqueue commits.
    WAKEUP: bool = True
    #: Address workers listen on for wake-ups (and advertise in the workers table); use the
    #: host's private address when web servers run on other hosts. None: no listener.
    WAKEUP_HOST: str | None = "127.0.0.1"
    #: Workers one enqueue's commit wakes, taken in turn from the live workers of its queue;
    #: None wakes every one of them.
    WAKEUP_FANOUT: int | None = 4
    #: Times a second at most a worker process reads its wake-up datagrams (each read may
    #: start one claim round); None: no bound. Bounds what a flood of datagrams can cost.
    WAKEUP_MAX_RATE: float | None = 50.0
    #: Restart delay of a worker process that keeps dying doubles up to this many seconds.
    RESTART_BACKOFF_MAX: float = 30.0
    #: Job threads close their database connections after each job (none held while idle).
    RELEASE_JOB_CONNECTIONS: bool = False
    #: Jobs a worker process claims beyond its free threads (claiming ahead); None adapts it
    #: to recent job durations (none while they are long), 0 turns it off.
    PREFETCH: int | None = None
    #: A job claimed ahead starts within this many seconds or is given back at once, without
    #: spending its attempt; a job running longer than half of it also gives the others back.
    PREFETCH_MAX_WAIT: float = 0.2
    #: Longest wait, in seconds, of the workers' and the supervisor's own queue queries on
    #: the network (connect, read, write: mysqlclient's timeouts) before the connection is
    #: given up; None: the driver's defaults (a silent partition then hangs for hours).
    DATABASE_TIMEOUT: float | None = 30.0

    # Maintenance (reaper, promotion, purge, status and health).
    #: Seconds between reaper passes (expired leases) in runworkers and skipqueue_reap.
    REAP_INTERVAL: float = 5.0
    #: Seconds between promotions of due scheduled jobs to ready.
    PROMOTE_INTERVAL: float = 1.0
    #: Rows the reaper or the promotion locks and changes per transaction.
    MAINTENANCE_BATCH: int = 100
    #: How long a finished job is kept, per status ("7d", "12h", seconds or a timedelta);
    #: None keeps that status forever. Used by skipqueue_purge without --older-than.
    PURGE_RETENTION: Mapping[str, object] = field(
        default_factory=lambda: {"succeeded": "7d", "cancelled": "7d", "failed": "30d"}
    )
    #: Seconds between scheduled purges inside runworkers; None: no scheduled purge.
    PURGE_INTERVAL: float | None = None
    #: Largest number of rows one purge transaction deletes (the starting chunk size).
    PURGE_CHUNK: int = 2000
    #: The purge shrinks its chunks so that one takes at most about this many seconds.
    PURGE_CHUNK_SECONDS: float = 0.5
    #: Pause between two purge chunks, in seconds.
    PURGE_SLEEP: float = 0.05
    #: Database aliases of replicas whose lag the purge watches.
    PURGE_REPLICAS: tuple[str, ...] = ()
    #: The purge pauses while a watched replica is more than this many seconds behind.
    PURGE_MAX_REPLICA_LAG: float = 5.0
    #: Copy purged jobs into the history table (JobArchive) before deleting them.
    PURGE_ARCHIVE: bool = False
    #: Exact counts in status stop here; beyond it the figure is an estimate, marked so.
    STATUS_COUNT_CAP: int = 100_000
    #: A worker whose heartbeat is older than this many seconds is stale (dead or stuck).
    WORKER_STALE_SECONDS: float = 60.0
    #: skipqueue_health fails when a ready job has waited longer than this, in seconds.
    HEALTH_MAX_READY_AGE: float = 300.0
    #: skipqueue_health fails when no reaper pass finished within this many seconds.
    HEALTH_MAX_REAPER_AGE: float = 60.0
    #: skipqueue_health fails when the server's InnoDB history list (row versions waiting for
    #: purge) is longer than this; None: not checked.
    HEALTH_MAX_HISTORY_LENGTH: int | None = None
    #: skipqueue_health fails when a transaction on the server has been open longer than this,
    #: in seconds; None: not checked.
    HEALTH_MAX_TRANSACTION_AGE: float | None = None
    #: Bearer token that lets Prometheus read the metrics view; None: staff logins only.
    METRICS_TOKEN: str | None = None
    #: OpenTelemetry spans for enqueues and attempts, and trace context carried by jobs and
    #: outbox messages (needs the opentelemetry-api package).
    TRACING: bool = False
    #: Seconds a worker trusts its list of paused queues before reading it again.
    PAUSE_CACHE_SECONDS: float = 1.0
    #: Seconds the per-minute counters and the rows of stopped or stale workers are kept.
    METRICS_RETENTION_SECONDS: float = 86_400.0
    #: Seconds between two prunes of old counters and worker rows by the maintenance loop.
    PRUNE_INTERVAL: float = 300.0

    # Outbox (django_skipqueue.outbox, skipqueue_relay).
    #: Broker the relay publishes to: ``amqp://...`` (RabbitMQ) or ``nats://...`` (JetStream).
    OUTBOX_BROKER_URL: str | None = None
    #: Topics publish() accepts, each mapped to its exchange (RabbitMQ) or subject (NATS);
    #: None sends the topic to the exchange or subject of the same name.
    OUTBOX_TOPICS: Mapping[str, str | None] = field(default_factory=dict)
    #: Keys are hashed into this many partitions; one relay at a time sends a partition.
    OUTBOX_PARTITIONS: int = 16
    #: Messages a relay reads and publishes per partition and round.
    OUTBOX_BATCH: int = 500
    #: Messages of one key a relay has on the wire before the broker answered the first; 1
    #: keeps a key's order even when the broker refuses one message and takes the next.
    OUTBOX_IN_FLIGHT_PER_KEY: int = 256
    #: Seconds a relay holds the partitions it claimed; a dead relay's pass to others after it.
    OUTBOX_LEASE_SECONDS: float = 30.0
    #: Failed attempts (broker refused the message) before a message becomes a dead letter.
    OUTBOX_MAX_ATTEMPTS: int = 10
    #: Base of the exponential retry backoff of a refused message, in seconds.
    OUTBOX_RETRY_BACKOFF: float = 1.0
    #: Upper bound of one retry delay, and of the reconnect delay, in seconds.
    OUTBOX_RETRY_BACKOFF_MAX: float = 300.0
    #: Largest accepted JSON payload of an outbox message, in bytes.
    OUTBOX_MAX_PAYLOAD_BYTES: int = 256 * 1024
    #: The relay declares the exchanges (RabbitMQ) or checks the streams (NATS) on start.
    OUTBOX_DECLARE: bool = False
    #: Longest pause of an idle relay between two looks at the outbox, in seconds.
    OUTBOX_IDLE_POLL_SECONDS: float = 1.0
    #: skipqueue_health fails when an unsent outbox message is older than this, in seconds.
    HEALTH_MAX_OUTBOX_AGE: float = 300.0

    # Reservations (django_skipqueue.reservations, when installed).
    #: Most units one pool (an item at a location) holds, free and held together.
    RESERVATION_POOL_CAP: int = 1000
    #: Database alias of the pools, holds and ledger.
    RESERVATION_DATABASE: str = "default"
    #: Seconds between two sweeps of expired holds by the maintenance loop.
    RESERVATION_SWEEP_INTERVAL: float = 5.0
    #: Longest seconds a reserve or retire that found free units locked by other transactions
    #: waits for them before it raises InsufficientStock (0: refuse at once, as SKIP LOCKED saw).
    RESERVATION_LOCKED_WAIT: float = 0.2

    # Recurring tasks (django_skipqueue.scheduling, when installed).
    #: Schedules declared in settings: name -> {"task": ..., "cron": ... or "interval": ...}.
    SCHEDULES: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    #: Seconds between two looks at the due schedules by the maintenance loop.
    SCHEDULER_INTERVAL: float = 1.0
    #: A tick reached more than this many seconds after its time counts as missed.
    SCHEDULER_GRACE: float = 60.0
    #: Seconds tick rows are kept (the admin's history of each schedule).
    SCHEDULER_TICK_RETENTION: float = 7 * 86_400.0
    #: skipqueue_health fails when an enabled schedule's next tick is this many seconds late.
    HEALTH_MAX_SCHEDULE_LAG: float = 300.0


_current: list[SkipQueueSettings] = []


def get_settings() -> SkipQueueSettings:
    """Return the current settings, read on first use and again after any setting changes.

    Reading them costs more than a claim's own Python work, and workers ask on every loop;
    ``setting_changed`` (override_settings) clears the copy.
    """
    if not _current:
        overrides: dict[str, Any] = {
            f.name: _read(f.name, f.type)
            for f in fields(SkipQueueSettings)
            if hasattr(settings, PREFIX + f.name)
        }
        _current[:] = [SkipQueueSettings(**overrides)]
    return _current[0]


def _read(name: str, kind: object) -> object:
    """Return a setting's value; a duration ("90s", a timedelta) as seconds where seconds go."""
    value = getattr(settings, PREFIX + name)
    if kind not in SECONDS or not isinstance(value, str | timedelta):
        return value
    try:
        return parse_duration(value).total_seconds()
    except ValueError:
        return value  # check E008 names it; raising here would break the checks themselves


@receiver(setting_changed)
def _forget(*, setting: str, **kwargs: object) -> None:
    if setting.startswith(PREFIX):
        _current.clear()
