"""The package's one backoff: its bounds, its jitter, and that jobs and messages both use it."""

from __future__ import annotations

import random

import pytest

from django_skipqueue import backoff, states
from django_skipqueue.outbox import states as outbox_states

pytestmark = pytest.mark.vendor_neutral


@pytest.mark.parametrize("attempt", [1, 2, 3, 6])
def test_each_delay_lies_between_half_and_the_whole_of_the_exponential(attempt):
    full = 2.0 * 2 ** (attempt - 1)
    draws = [backoff.exponential(attempt, 2.0, 3600, random.Random(seed)) for seed in range(500)]
    assert all(full / 2 <= delay <= full for delay in draws)
    # Jittered: the draws spread over the upper half, they are not one value.
    assert max(draws) - min(draws) > full / 4
    assert len(set(draws)) > 400


def test_the_cap_bounds_every_delay_and_a_huge_attempt_does_not_overflow():
    draws = [backoff.exponential(n, 1.0, 30.0) for n in (6, 20, 5000) for _ in range(200)]
    assert all(15.0 <= delay <= 30.0 for delay in draws)


def test_a_base_of_zero_retries_at_once_and_attempt_zero_counts_as_the_first():
    assert backoff.exponential(4, 0, 60) == 0.0
    rng = random.Random(3)
    assert 0.5 <= backoff.exponential(0, 1.0, 60, rng) <= 1.0


def test_a_seeded_generator_gives_the_same_delays():
    first = [backoff.exponential(n, 1.0, 60, random.Random(11)) for n in range(1, 6)]
    again = [backoff.exponential(n, 1.0, 60, random.Random(11)) for n in range(1, 6)]
    assert first == again


def test_a_job_and_a_message_wait_the_same_for_the_same_attempt(settings):
    settings.SKIPQUEUE_RETRY_BACKOFF_MAX = 300
    random.seed(5)
    job = states.backoff_delay(3, 1.0)
    random.seed(5)
    message = outbox_states.after_refusal(3, 10, 1.0, 300).delay
    assert job == message
    assert 2.0 <= job <= 4.0


def test_a_refused_message_retries_with_jitter_until_its_attempts_are_spent():
    delays = {outbox_states.after_refusal(2, 5, 1.0, 300).delay for _ in range(50)}
    assert len(delays) > 1 and all(d is not None and 1.0 <= d <= 2.0 for d in delays)
    spent = outbox_states.after_refusal(5, 5, 1.0, 300)
    assert spent.transition is outbox_states.DEAD_LETTER and spent.delay is None


def test_an_unanswered_message_waits_the_delay_of_the_attempt_before():
    # Its claim's attempt is given back: attempt 3 unanswered waits as attempt 2 would.
    step = outbox_states.after_no_answer(3, 1.0, 300)
    assert step.transition is outbox_states.RETRY_UNANSWERED
    assert step.delay is not None and 1.0 <= step.delay <= 2.0
    first = outbox_states.after_no_answer(1, 1.0, 300).delay
    assert first is not None and 0.5 <= first <= 1.0
