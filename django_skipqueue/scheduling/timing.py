"""When a schedule ticks: cron expressions in a time zone, or a fixed interval.

Cron times are computed in the schedule's zone by cronsim, which follows cron's own rules at
daylight-saving changes: a time that does not exist (02:30 on a spring-forward night) runs
once at the first instant after the gap (03:00); a time that exists twice (02:30 on an autumn
night) runs once, at its first occurrence, unless the hour field is a wildcard or a range
(``*/30 * * * *`` runs in both passes of the repeated hour: it asks for every half hour).
Every time is handed back in UTC, which is how ticks are stored and compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from django_skipqueue.exceptions import InvalidSchedule

#: Nicknames cronsim does not read itself, as the five fields they stand for.
NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
#: Missed ticks counted one by one at most: beyond, the count says "at least".
COUNT_CAP = 10_000
ONE_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Timing:
    """A schedule's rule: a cron expression in a zone, or every ``interval`` seconds."""

    cron: str = ""
    interval: int | None = None
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        if not self.cron and not self.interval:
            raise InvalidSchedule("give a cron expression or an interval")
        if self.cron and self.interval:
            raise InvalidSchedule("give either a cron expression or an interval, not both")
        if self.interval is not None and (
            isinstance(self.interval, bool)
            or not isinstance(self.interval, int)
            or self.interval < 1
        ):
            raise InvalidSchedule(f"interval must be whole seconds >= 1, not {self.interval!r}")
        zone(self.time_zone)
        if self.cron:
            self._cron(datetime.now(UTC))

    def after(self, moment: datetime) -> datetime:
        """The first tick strictly after ``moment``.

        Interval ticks fall on multiples of the interval since 1970-01-01 UTC (every 3600 s is
        on the hour), so every scheduler computes the same times, whenever it started.
        """
        if self.interval:
            return _interval_after(self.interval, moment)
        return _utc(next(self._cron(moment)))

    def due(self, start: datetime, now: datetime, keep: int) -> tuple[list[datetime], int]:
        """The last ``keep`` ticks from ``start`` to ``now`` (oldest first), and how many.

        ``start`` is the schedule's next tick, so it is one of them when it is due.
        """
        if start > now:
            return [], 0
        if self.interval:
            count = (now - start) // timedelta(seconds=self.interval) + 1
            kept = [
                start + timedelta(seconds=self.interval * i)
                for i in range(max(0, count - keep), count)
            ]
            return kept, count
        newest = self._cron(now + ONE_MICROSECOND, reverse=True)
        kept = [_utc(t) for t in islice(_until(newest, start), keep)]
        count = sum(
            1 for _ in islice(_until(self._cron(start - ONE_MICROSECOND), None, now), COUNT_CAP)
        )
        return kept[::-1], max(count, len(kept))

    def _cron(self, moment: datetime, *, reverse: bool = False) -> Iterator[datetime]:
        expression = NICKNAMES.get(self.cron.strip().lower(), self.cron)
        try:
            return iter(CronSim(expression, moment.astimezone(zone(self.time_zone)), reverse))
        except CronSimError as error:
            raise InvalidSchedule(f"bad cron expression {self.cron!r}: {error}", "cron") from None


#: The longest time zone name a schedule stores (the column's length).
MAX_ZONE_NAME = 64


def zone(name: str) -> ZoneInfo:
    """The time zone called ``name``, or InvalidSchedule.

    A name is looked up as a file of the zone database: one longer than the column (or than
    a file name may be) is refused before the lookup, and an error of the lookup is its own.
    """
    if not isinstance(name, str) or len(name) > MAX_ZONE_NAME:
        raise InvalidSchedule(f"unknown time zone {name!r:.80}", "time_zone")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise InvalidSchedule(f"unknown time zone {name!r}", "time_zone") from None


def _until(
    times: Iterator[datetime], oldest: datetime | None, newest: datetime | None = None
) -> Iterator[datetime]:
    """Ticks of ``times`` while they stay within [oldest, newest]."""
    for moment in times:
        if (oldest is not None and moment < oldest) or (newest is not None and moment > newest):
            return
        yield moment


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _interval_after(interval: int, moment: datetime) -> datetime:
    steps = (moment - EPOCH) // timedelta(seconds=interval) + 1
    return EPOCH + timedelta(seconds=interval * steps)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
