"""Record what the broker said, fenced on the claim that published: a lost lease changes nothing.

Each outcome is one transition of ``states.py`` (a refusal's retry or dead letter decided
there), written by ``transitions.py``.

Every statement matches rows by id *and* by the claim's token in ``owner``: if another relay
took the partition over (this relay stalled past its lease), it re-marked the rows with its
own token, and this relay's confirm, retry or release matches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django_skipqueue.outbox import states, transitions
from django_skipqueue.outbox.partitions import Row


@dataclass(slots=True)
class Outcomes:
    """The fate of each message of a round, filled in while publishing."""

    sent: list[int] = field(default_factory=list)
    #: Refused by the broker: retried later (or a dead letter after its attempts).
    retry: list[tuple[Row, str]] = field(default_factory=list)
    #: Retried later too, but the broker never answered: it may have taken the message.
    retry_unanswered: list[tuple[Row, str]] = field(default_factory=list)
    dead: list[tuple[Row, str]] = field(default_factory=list)
    #: Published but unconfirmed when the connection broke: may have reached the broker.
    unknown: list[tuple[Row, str]] = field(default_factory=list)
    #: Never handed to the broker by this claim.
    untried: list[Row] = field(default_factory=list)
    #: Confirmed after an earlier message of its key was refused (more than one in flight).
    overtaken: int = 0


def mark_claimed(using: str, ids: Sequence[int], token: str, relay: str, partition: int) -> int:
    """Stamp the rows with the claim's token before publishing; return the rows stamped.

    The stamp is the fence of every later write, and the trace a crash leaves (a row still
    stamped when read again may have reached the broker). It is fenced itself on the relay's
    live lease of the partition: a relay that stalled past its lease stamps nothing (0), and
    must publish nothing, since another relay may be sending the same rows.
    """
    return transitions.claim(using, ids, token, relay, partition)


def settle(
    using: str, token: str, outcomes: Outcomes, *, backoff: float, cap: float, max_attempts: int
) -> tuple[int, int, int]:
    """Write the outcomes; return how many rows were deleted, retried and dead-lettered.

    ``owner`` keeps the trace of a copy that may have reached the broker: this claim's token
    when its publish went unanswered, else what the row carried before this claim (the token
    of an earlier claim left unsettled, or none). A row's next attempt is marked
    ``X-Skipqueue-Resent`` whenever it carries one, so a refusal or a give-back by this claim
    never erases an earlier claim's possible duplicate.
    """
    sent = transitions.send(using, outcomes.sent, token)
    retried = dead = 0
    for message, error in outcomes.retry:
        step = states.after_refusal(message.attempts, max_attempts, backoff, cap)
        if step.transition is states.DEAD_LETTER:
            error = f"{error} (after {message.attempts} attempts)"
            dead += transitions.dead_letter(using, token, message.pk, error)
            continue
        assert step.delay is not None
        retried += transitions.retry(using, token, message.pk, error, step.delay, message.owner)
    for message, error in outcomes.retry_unanswered:
        # No answer, so no attempt spent (as for an unreachable broker): the broker may have
        # taken it, the row keeps this claim's token as the trace of a possible duplicate.
        step = states.after_no_answer(message.attempts, backoff, cap)
        assert step.delay is not None
        retried += transitions.retry_unanswered(using, token, message.pk, error, step.delay)
    for message, error in outcomes.dead:
        dead += transitions.dead_letter(using, token, message.pk, error)
    for message, error in outcomes.unknown:
        # In flight when the connection broke: no answer, no attempt spent; the token stays.
        transitions.lose_answer(using, token, message.pk, error)
    for trace, ids in _by_trace(outcomes.untried).items():
        # Never handed to the broker by this claim: no attempt spent, and the row as the claim
        # found it (one UPDATE in the usual case, where no earlier claim left a trace).
        transitions.give_back(using, token, ids, trace)
    return sent, retried, dead


def _by_trace(messages: Sequence[Row]) -> dict[str | None, list[int]]:
    """The ids of ``messages`` by the claim each carried before this one (None: none)."""
    ids: dict[str | None, list[int]] = {}
    for message in messages:
        ids.setdefault(message.owner, []).append(message.pk)
    return ids
