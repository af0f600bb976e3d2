"""Cron and interval timing, in time zones and across daylight-saving changes (cronsim's rules).

Europe/Paris changes at 02:00 on 2026-03-29 (to 03:00, CEST) and at 03:00 on 2026-10-25 (back
to 02:00, CET); America/New_York at 02:00 on 2026-03-08 and 2026-11-01.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_skipqueue.exceptions import InvalidSchedule
from django_skipqueue.scheduling.timing import Timing


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def ticks(timing: Timing, start: datetime, count: int) -> list[datetime]:
    found = []
    for _ in range(count):
        start = timing.after(start)
        found.append(start)
    return found


def test_paris_0300_is_0100_utc_in_summer_and_0200_in_winter():
    timing = Timing("0 3 * * *", time_zone="Europe/Paris")
    assert timing.after(utc(2026, 7, 1)) == utc(2026, 7, 1, 1)
    assert timing.after(utc(2026, 12, 1)) == utc(2026, 12, 1, 2)


def test_spring_forward_0230_runs_once_at_0300():
    """02:30 does not exist on 2026-03-29 in Paris: the tick is 03:00 CEST (01:00 UTC), once."""
    timing = Timing("30 2 * * *", time_zone="Europe/Paris")
    assert ticks(timing, utc(2026, 3, 28, 12), 3) == [
        utc(2026, 3, 29, 1, 0),  # 03:00 CEST, the first instant after the gap
        utc(2026, 3, 30, 0, 30),  # 02:30 CEST
        utc(2026, 3, 31, 0, 30),
    ]


def test_autumn_repeated_0230_runs_once_at_its_first_occurrence():
    """02:30 happens twice on 2026-10-25 in Paris: a daily 02:30 runs at the first (CEST) only."""
    timing = Timing("30 2 * * *", time_zone="Europe/Paris")
    assert ticks(timing, utc(2026, 10, 24, 12), 3) == [
        utc(2026, 10, 25, 0, 30),  # 02:30 CEST
        utc(2026, 10, 26, 1, 30),  # 02:30 CET, the next day
        utc(2026, 10, 27, 1, 30),
    ]


def test_autumn_every_half_hour_runs_in_both_passes_of_the_repeated_hour():
    timing = Timing("*/30 * * * *", time_zone="Europe/Paris")
    local = ticks(timing, utc(2026, 10, 24, 23, 15), 6)  # 01:15 CEST
    assert [t.strftime("%H:%M") for t in local] == [
        "23:30",
        "00:00",
        "00:30",
        "01:00",
        "01:30",
        "02:00",
    ]  # 01:30 and 02:00, 02:30 CEST, then 02:00, 02:30 CET, 03:00 CET: no gap, no repeat
    assert len(set(local)) == 6


def test_new_york_spring_forward_0215_and_autumn_0130():
    spring = Timing("15 2 * * *", time_zone="America/New_York")
    assert spring.after(utc(2026, 3, 7, 12)) == utc(2026, 3, 8, 7, 0)  # 03:00 EDT
    autumn = Timing("30 1 * * *", time_zone="America/New_York")
    assert ticks(autumn, utc(2026, 10, 31, 12), 2) == [utc(2026, 11, 1, 5, 30),
                                                       utc(2026, 11, 2, 6, 30)]  # fmt: skip


def test_due_ticks_across_the_spring_gap_are_those_of_after():
    timing = Timing("30 2 * * *", time_zone="Europe/Paris")
    start = timing.after(utc(2026, 3, 27, 12))
    due, count = timing.due(start, utc(2026, 3, 31, 12), keep=10)
    assert due == ticks(timing, utc(2026, 3, 27, 12), 4)
    assert count == 4
    assert timing.due(start, utc(2026, 3, 31, 12), keep=2) == (due[-2:], 4)


def test_interval_ticks_fall_on_multiples_since_the_epoch():
    timing = Timing(interval=3600)
    assert timing.after(utc(2026, 5, 1, 10, 59, 59)) == utc(2026, 5, 1, 11)
    assert timing.after(utc(2026, 5, 1, 11)) == utc(2026, 5, 1, 12)
    due, count = timing.due(utc(2026, 5, 1, 11), utc(2026, 5, 1, 15, 30), keep=2)
    assert (due, count) == ([utc(2026, 5, 1, 14), utc(2026, 5, 1, 15)], 5)


def test_six_fields_tick_every_second_and_nicknames_are_read():
    assert Timing("* * * * * *").after(utc(2026, 1, 1)) == utc(2026, 1, 1) + timedelta(seconds=1)
    assert Timing("@daily", time_zone="Asia/Tokyo").after(utc(2026, 1, 1)) == utc(2026, 1, 1, 15)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "0 3 * *"}, "cron"),
        ({"cron": "0 3 31 2 *"}, "cron"),
        ({"cron": "0 3 * * *", "time_zone": "Europe/Pariss"}, "time_zone"),
        ({"cron": "0 3 * * *", "interval": 60}, ""),
        ({}, ""),
        ({"interval": 0}, ""),
    ],
)
def test_bad_rules_say_what_is_wrong(kwargs: dict, field: str):
    with pytest.raises(InvalidSchedule) as raised:
        Timing(**kwargs)
    assert raised.value.field == field


def test_due_ticks_across_the_repeated_autumn_hour_are_each_counted_once():
    timing = Timing("*/30 * * * *", time_zone="Europe/Paris")
    start = utc(2026, 10, 24, 23, 30)  # 01:30 CEST
    due, count = timing.due(start, utc(2026, 10, 25, 2, 0), keep=100)  # to 03:00 CET
    assert due == ticks(timing, start - timedelta(seconds=1), 6)
    assert count == 6 and len(set(due)) == 6
