"""tests.support.steady: a state is asserted once it holds for consecutive reads, within a bound.

The monitoring tests read live processes through it (a scrape of a live server may time out for
a moment on a loaded machine); these show that it rides out such a moment and still fails on a
state that is wrong, or that comes and goes.
"""

from __future__ import annotations

import itertools

import pytest

from tests.support.steady import steady, steady_equal


def test_a_moment_that_does_not_hold_is_read_again():
    up = {"queue": 1.0, "workers": 1.0}
    scrapes = [{"queue": 0.0, "workers": 1.0}, up, {**up, "queue": 0.0}, up, up, up, up]
    read: list[dict[str, float]] = []

    def targets_up() -> dict[str, float]:
        read.append(scrapes[len(read)])
        return read[-1]

    assert steady_equal(targets_up, up, "targets up", timeout=5) == up
    assert len(read) == 6  # down, up, down again, then up three times in a row


def test_a_refused_read_counts_as_not_holding():
    attempts = itertools.count()

    def scrape() -> int:
        if next(attempts) < 2:
            raise ConnectionRefusedError("not listening yet")
        return 1

    assert steady(scrape, lambda value: value == 1, "scrape", timeout=5, interval=0.01) == 1
    assert next(attempts) == 5  # two refused, then three reads in a row


def test_a_wrong_state_fails_with_what_was_read_last():
    with pytest.raises(AssertionError) as failure:
        steady_equal(
            lambda: {"queue": 0.0, "workers": 1.0},
            {"queue": 1.0, "workers": 1.0},
            "targets up",
            timeout=0.3,
        )
    assert str(failure.value) == (
        "targets up: not steady for 3 reads within 0.3 s; last read: 'queue': 0.0 (expected 1.0)"
    )


def test_a_state_that_comes_and_goes_never_settles():
    flapping = itertools.cycle([1, 1, 0])
    with pytest.raises(AssertionError, match=r"flapping: not steady for 3 reads within 0\.5 s"):
        steady_equal(lambda: next(flapping), 1, "flapping", timeout=0.5)
