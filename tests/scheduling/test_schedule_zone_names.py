"""A time zone name is refused with InvalidSchedule whatever it holds: one longer than a file
name may be made the zone database's lookup raise OSError (found by the property tests)."""

from __future__ import annotations

import pytest

from django_skipqueue.exceptions import InvalidSchedule
from django_skipqueue.scheduling.definition import from_setting


@pytest.mark.parametrize("name", ["€" * 86, "x" * 300, "../etc/passwd", "a\x00b", "Nowhere/City"])
def test_a_zone_name_that_names_no_zone_is_invalid_schedule(name):
    entry = {"task": "tests.support.tasks.noop", "cron": "0 * * * *", "time_zone": name}
    with pytest.raises(InvalidSchedule, match="unknown time zone"):
        from_setting("nightly", entry)


def test_a_known_zone_is_read():
    entry = {"task": "tests.support.tasks.noop", "cron": "0 * * * *", "time_zone": "Europe/Paris"}
    assert from_setting("nightly", entry).timing.time_zone == "Europe/Paris"
