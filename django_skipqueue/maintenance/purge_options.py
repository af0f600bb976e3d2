"""What a purge removes (retention per finished status) and how (chunk, pacing, replicas)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django_skipqueue.conf import get_settings
from django_skipqueue.durations import parse_duration
from django_skipqueue.models import FINISHED_STATUSES


@dataclass(frozen=True)
class PurgeOptions:
    """Everything one purge run needs; ``from_settings`` fills the gaps from SKIPQUEUE_*."""

    using: str = "default"
    #: Finished status -> how old (finished_at) a job must be before it is purged.
    retention: Mapping[str, timedelta] = field(default_factory=dict)
    #: Largest number of rows per transaction; the adaptive size starts here.
    chunk: int = 2000
    #: The chunk shrinks so that one transaction takes at most about this long.
    chunk_seconds: float = 0.5
    #: Pause between two chunks, in seconds.
    sleep: float = 0.05
    #: Database aliases of the replicas to watch.
    replicas: tuple[str, ...] = ()
    max_replica_lag: float = 5.0
    #: Seconds between two lag readings while paused.
    lag_poll_seconds: float = 1.0
    archive: bool = False
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.chunk < 1:
            raise ValueError("chunk must be at least 1 row.")
        if self.sleep < 0 or self.chunk_seconds <= 0 or self.max_replica_lag < 0:
            raise ValueError("sleep, chunk_seconds and max_replica_lag must be positive.")

    @classmethod
    def from_settings(
        cls,
        *,
        using: str = "default",
        statuses: Iterable[str] | None = None,
        older_than: timedelta | None = None,
        **overrides: Any,
    ) -> PurgeOptions:
        """Build options from the settings, with ``overrides`` (None values are ignored)."""
        config = get_settings()
        values: dict[str, Any] = {
            "chunk": config.PURGE_CHUNK,
            "chunk_seconds": config.PURGE_CHUNK_SECONDS,
            "sleep": config.PURGE_SLEEP,
            "replicas": tuple(config.PURGE_REPLICAS),
            "max_replica_lag": config.PURGE_MAX_REPLICA_LAG,
            "archive": config.PURGE_ARCHIVE,
        }
        values.update({name: value for name, value in overrides.items() if value is not None})
        values["replicas"] = tuple(values["replicas"])
        retention = retention_by_status(config.PURGE_RETENTION, statuses, older_than)
        return cls(using=using, retention=retention, **values)


def retention_by_status(
    configured: Mapping[str, object],
    statuses: Iterable[str] | None = None,
    older_than: timedelta | None = None,
) -> dict[str, timedelta]:
    """Return status -> minimum age for the statuses to purge.

    ``older_than`` applies to every status asked for; without it each status keeps its
    configured retention, and a status configured as None is never purged.
    """
    wanted = list(statuses or FINISHED_STATUSES)
    unknown = [s for s in wanted if s not in FINISHED_STATUSES]
    if unknown:
        raise ValueError(
            f"Only finished jobs are purged: {', '.join(unknown)} is not one of "
            f"{', '.join(FINISHED_STATUSES)}."
        )
    if older_than is not None:
        return {status: older_than for status in wanted}
    return {
        status: parse_duration(configured[status])
        for status in wanted
        if configured.get(status) is not None
    }
