"""One relay round: lease partitions, read their messages, publish outside any transaction,
then delete what the broker confirmed, fenced on this round's claim."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from django.db import DatabaseError

from django_skipqueue.conf import get_settings
from django_skipqueue.db.statements import retry_whole_transaction, short_transaction
from django_skipqueue.exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from django_skipqueue.outbox import partitions
from django_skipqueue.outbox.partitions import Row
from django_skipqueue.outbox.settle import Outcomes, mark_claimed, settle
from django_skipqueue.outbox.tracing import traced
from django_skipqueue.outbox.transports import MaybeTaken, Outgoing, Result, Transport, Unanswered

logger = logging.getLogger("django_skipqueue.outbox.relay")

#: Partitions one round leases at most: several relays share the work round by round.
PARTITIONS_PER_ROUND = 4
#: At most this many messages of a wave are in flight before the relay waits for their confirms.
PIPELINE = 256
#: A round stops publishing after this share of the lease, so the lease never runs out.
LEASE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Round:
    """What one round did: rows sent (deleted), retried, dead-lettered, left for later."""

    sent: int = 0
    retried: int = 0
    dead: int = 0
    resent: int = 0
    confirm_seconds: float = 0.0
    #: Work is waiting in partitions other relays hold: look again soon, do not idle.
    blocked: bool = False
    #: This round's outcomes wait for the next round to write them (see Relay.run_round).
    deferred: bool = False

    @property
    def busy(self) -> bool:
        return bool(self.sent or self.retried or self.dead or self.deferred)


@dataclass(frozen=True, slots=True)
class Claim:
    """What one claim transaction took: its token, leased partitions and stamped messages."""

    token: str
    numbers: list[int]
    messages: list[Row]
    #: Monotonic time after which the round publishes nothing more (a share of the lease).
    deadline: float

    def joined(self, more: Claim) -> Claim:
        """This claim and ``more`` (another partition of the same token) as one."""
        messages = sorted(self.messages + more.messages, key=lambda m: m.pk)
        deadline = min(self.deadline, more.deadline)
        return Claim(self.token, self.numbers + more.numbers, messages, deadline)


@dataclass(frozen=True, slots=True)
class Unsettled:
    """A published claim whose outcomes are not written yet."""

    claim: Claim
    outcomes: Outcomes


class Relay:
    """Move messages from the outbox to the broker, round by round."""

    def __init__(self, using: str, transport: Transport, name: str) -> None:
        self.using = using
        # With tracing on, a span per message in the trace of the transaction that wrote it.
        self.transport = traced(transport)
        self.name = name
        self._rounds = 0
        #: The next round's claim, taken while the broker confirmed one of this round's waves.
        self._next: Claim | None = None
        #: This round's outcomes, written while the next round waits for its first confirms.
        self._unsettled: Unsettled | None = None
        #: What settling the round before wrote during this round's waits.
        self._earlier_counts = Round()
        #: Partitions with work the next round's claim may still try, once looked up.
        self._candidates: list[int] | None = None

    def run_round(self, hint: frozenset[int] | None = None) -> Round:
        """Run one round; raise BrokerUnavailable after settling if the connection broke.

        ``hint``: partitions a wake-up datagram named, leased without looking for the
        partitions with work first (the caller runs a plain round if this one finds nothing).

        Two commits a round: the claim (lease the partitions, read and stamp their messages)
        and the settlement (confirmed rows deleted, the others recorded, the leases given back).
        Publishing happens between them, in no transaction. The broker's confirm waits carry
        the database work, so one relay's database work overlaps the broker's: the first
        wave's wait settles the round before (whose partitions stay leased until then), the
        next waits claim the next round a partition each (other partitions: this round's are
        still leased). A round followed by a claimed one leaves its own settlement to that round;
        the returned counts are those of the settlements written during the call.
        """
        claim, self._next = self._next, None
        if claim is None:
            # A settlement is deferred only to a claimed next round: none is waiting here.
            self._earlier_counts = _merged(self._earlier_counts, self._settle_earlier())
            if hint:
                candidates = sorted(hint)
            else:
                candidates, held = partitions.free_with_work(self.using)
                if not candidates:
                    return _merged(self._reported(), Round(blocked=held > 0))
            claim = self._take(candidates)
        numbers, messages = claim.numbers, claim.messages
        if not messages:
            if numbers:
                partitions.release(self.using, self.name, numbers)
            return _merged(self._reported(), Round(blocked=not numbers))
        settled = False
        try:
            started = time.monotonic()
            outcomes, resent, broken, overlapped = self._publish(messages, claim.deadline)
            elapsed = time.monotonic() - started - overlapped
            # Not settled during a wait (the connection broke first, or the database failed).
            self._earlier_counts = _merged(self._earlier_counts, self._settle_earlier())
            if broken is None and self._next is not None:
                self._unsettled = Unsettled(claim, outcomes)
                counts: tuple[int, int, int] = (0, 0, 0)
            else:
                counts = self._settle(claim, outcomes)
            settled = True
        finally:
            if not settled:
                partitions.release(self.using, self.name, numbers)
        if resent:
            unsettled = sorted({m.owner for m in messages if m.owner is not None})
            logger.info("resent=%d after unsettled claims=%s", resent, ",".join(unsettled))
        sent, retried, dead = counts
        if broken is not None:
            # Reported by the next round that returns.
            self._earlier_counts = _merged(self._earlier_counts, Round(sent, retried, dead))
            raise broken
        done = Round(
            sent,
            retried,
            dead,
            resent,
            elapsed / max(len(outcomes.sent), 1),
            deferred=self._unsettled is not None,
        )
        return _merged(self._reported(), done)

    def give_back(self) -> None:
        """Return a claim taken for a round that will not run (the relay stops): its messages
        as the claim found them (no attempt spent; an earlier claim's trace of a possible
        duplicate kept), its partitions released."""
        self._settle_earlier()
        claim, self._next = self._next, None
        if claim is None:
            return
        with short_transaction(self.using):
            untried = Outcomes(untried=list(claim.messages))
            settle(self.using, claim.token, untried, backoff=0, cap=0, max_attempts=1)
            partitions.release(self.using, self.name, claim.numbers)

    def _settle(self, claim: Claim, outcomes: Outcomes) -> tuple[int, int, int]:
        """Write ``outcomes`` and give the claim's partitions back, in one transaction."""
        settings = get_settings()
        with short_transaction(self.using):
            counts = settle(
                self.using,
                claim.token,
                outcomes,
                backoff=settings.OUTBOX_RETRY_BACKOFF,
                cap=settings.OUTBOX_RETRY_BACKOFF_MAX,
                max_attempts=settings.OUTBOX_MAX_ATTEMPTS,
            )
            partitions.release(self.using, self.name, claim.numbers)
        return counts

    def _reported(self) -> Round:
        """The counts of settlements written since the last round returned, now reported."""
        counts, self._earlier_counts = self._earlier_counts, Round()
        return counts

    def _settle_earlier(self) -> Round:
        """Settle the round before, if it left its settlement to this one; its counts."""
        unsettled, self._unsettled = self._unsettled, None
        if unsettled is None:
            return Round()
        try:
            sent, retried, dead = self._settle(unsettled.claim, unsettled.outcomes)
        except BaseException:
            self._unsettled = unsettled  # the next call, or give_back(), tries again
            raise
        return Round(sent, retried, dead)

    def _settle_while_waiting(self) -> None:
        """Settle the round before during a confirm wait. Never raises: on a database error
        the round settles it after publishing (as it must before it settles its own)."""
        try:
            self._earlier_counts = _merged(self._earlier_counts, self._settle_earlier())
        except DatabaseError as error:
            logger.warning("settling the last round failed during a confirm wait error=%s", error)

    def _take(
        self, candidates: list[int], *, limit: int = PARTITIONS_PER_ROUND, token: str = ""
    ) -> Claim:
        """Claim up to ``limit`` partitions of ``candidates`` in one transaction, for the
        claim ``token`` (a new one when empty)."""
        # Measured before the claim: the lease runs from a moment no later than this one.
        deadline = time.monotonic() + get_settings().OUTBOX_LEASE_SECONDS * LEASE_SHARE
        if not token:
            self._rounds += 1
            token = f"{self.name}#{self._rounds}"
        numbers, messages = retry_whole_transaction(
            self.using, lambda: self._claim(candidates, token, limit)
        )
        return Claim(token, numbers, messages, deadline)

    def _prefetch_one(self) -> None:
        """Claim one more partition for the next round while the broker confirms a wave.

        A partition a wait (its lease, its messages read and stamped, a commit: about one
        wave's confirm wait), so the next round's claim hides behind the broker's waits
        instead of outlasting the last one. Never raises: a database error leaves the next
        round to claim as usual.
        """
        try:
            if self._candidates is None:
                self._candidates, _ = partitions.free_with_work(self.using)
                random.shuffle(self._candidates)
            while self._candidates and (
                self._next is None or len(self._next.numbers) < PARTITIONS_PER_ROUND
            ):
                number = self._candidates.pop()
                token = self._next.token if self._next is not None else ""
                claim = self._take([number], limit=1, token=token)
                if claim.messages:
                    self._next = claim if self._next is None else self._next.joined(claim)
                    return
                if claim.numbers:  # nothing sendable in it now (its keys wait for retries)
                    partitions.release(self.using, self.name, claim.numbers)
        except DatabaseError as error:
            logger.warning("next claim failed while confirms were awaited error=%s", error)

    def _claim(self, candidates: list[int], token: str, limit: int) -> tuple[list[int], list[Row]]:
        """Lease partitions, read their sendable messages and stamp them, in one transaction."""
        settings = get_settings()
        messages: list[Row] = []
        with short_transaction(self.using):
            numbers = partitions.claim(
                self.using,
                self.name,
                candidates,
                limit=limit,
                lease=settings.OUTBOX_LEASE_SECONDS,
            )
            for number in numbers:
                backlog = partitions.sendable(self.using, number, settings.OUTBOX_BATCH).messages
                ids = [m.pk for m in backlog]
                if backlog and mark_claimed(self.using, ids, token, self.name, number) != len(ids):
                    logger.warning(
                        "lease lost before publishing partition=%d relay=%s", number, self.name
                    )
                    continue
                messages += backlog
        return numbers, sorted(messages, key=lambda m: m.pk)

    def _publish(
        self, messages: list[Row], deadline: float
    ) -> tuple[Outcomes, int, BrokerUnavailable | None, float]:
        """Publish in id order, in waves with their confirms in flight: a wave holds at most
        SKIPQUEUE_OUTBOX_IN_FLIGHT_PER_KEY messages of a key, and a message that fails stops
        its key: no later message of the key goes out in this round.

        The confirm waits carry the database work (see run_round): the first settles the round
        before when it left its settlement to this one, the next ones claim the next round a
        partition a wait (the last wave's wait runs whatever is left). The seconds they took
        are returned last (they are not the broker's).
        """
        outcomes = Outcomes()
        stopped: set[str] = set()
        resent = 0
        settings = get_settings()
        for message in messages:
            message.attempts += 1
        pending = messages
        overlapped = [0.0]

        def timed(work: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                began = time.monotonic()
                work()
                overlapped[0] += time.monotonic() - began

            return run

        # One per wave's confirm wait, in order; the last wave's wait takes what is left.
        self._candidates = None
        waits = [timed(self._prefetch_one)] * PARTITIONS_PER_ROUND
        if self._unsettled is not None:
            waits.insert(0, timed(self._settle_while_waiting))
        while pending:
            if time.monotonic() > deadline:
                outcomes.untried += pending
                break
            wave, pending = _wave(pending, stopped, outcomes, settings.OUTBOX_IN_FLIGHT_PER_KEY)
            resent += sum(message.owner is not None for message in wave)
            sending = [outgoing(m, settings.OUTBOX_TOPICS) for m in wave]
            work, waits = (waits, []) if not pending else (waits[:1], waits[1:])
            answers = self.transport.send_many(sending, while_waiting=_in_order(work))
            broken = self._record(wave, sending, answers, stopped, outcomes)
            if broken is not None or len(answers) < len(wave):
                outcomes.untried += pending
                return outcomes, resent, broken or BrokerUnavailable("connection lost"), 0.0
        return outcomes, resent, None, overlapped[0]

    def _record(
        self,
        wave: list[Row],
        sending: list[Outgoing],
        answers: list[Result | None],
        stopped: set[str],
        outcomes: Outcomes,
    ) -> BrokerUnavailable | None:
        """Sort the wave's answers into ``outcomes``, in id order; return a lost connection."""
        broken: BrokerUnavailable | None = None
        for message, wire, answer in zip(wave, sending, answers, strict=False):
            if (
                message.key
                and message.key in stopped
                and isinstance(answer, MessageNotConfirmed | MessageRejected)
                and not isinstance(answer, MaybeTaken)
            ):
                # Behind a failed message of its key, and refused too (or, Unanswered, not
                # taken): it waits for its key's retry instead of being sent out of order.
                outcomes.untried.append(message)
                continue
            if isinstance(answer, Unanswered):
                # The broker closed the channel mid-wave, refusing one message: ask again one
                # at a time. A message it took before the refusal arrives a second time.
                headers = {**wire.headers, "X-Skipqueue-Resent": f"channel closed: {answer}"}
                answer = broken or self._send_one(replace(wire, headers=headers))
            if answer is None:
                if message.key and message.key in stopped:
                    # The broker took it after refusing an earlier message of its key: only
                    # possible with more than one message of a key in flight.
                    logger.warning("overtaken key=%s id=%d", message.key, message.pk)
                    outcomes.overtaken += 1
                outcomes.sent.append(message.pk)
            elif isinstance(answer, BrokerUnavailable):
                outcomes.unknown.append((message, str(answer)))
                broken = answer
            elif isinstance(answer, MessageRejected):
                outcomes.dead.append((message, str(answer)))
            elif isinstance(answer, MaybeTaken):
                # No answer on a live connection: retried later, marked as a possible duplicate.
                outcomes.retry_unanswered.append((message, str(answer)))
                stopped.add(message.key)
            else:
                outcomes.retry.append((message, str(answer)))
                stopped.add(message.key)
        # Never sent: the connection broke before them.
        outcomes.untried += wave[len(answers) :]
        return broken

    def _send_one(self, message: Outgoing) -> Result | None:
        try:
            self.transport.send(message)
        except (MessageRejected, MessageNotConfirmed, BrokerUnavailable) as error:
            return error
        return None


def _in_order(work: list[Callable[[], None]]) -> Callable[[], None] | None:
    """One callable running ``work`` in order (None when there is none)."""
    if not work:
        return None

    def run() -> None:
        for part in work:
            part()

    return run


def _merged(first: Round, second: Round) -> Round:
    """The counts of two rounds' settlements; the rest of ``second``."""
    return replace(
        second,
        sent=first.sent + second.sent,
        retried=first.retried + second.retried,
        dead=first.dead + second.dead,
        resent=first.resent + second.resent,
    )


def _wave(
    pending: list[Row], stopped: set[str], outcomes: Outcomes, per_key: int
) -> tuple[list[Row], list[Row]]:
    """Split off the next wave: at most ``per_key`` messages of each key (keyless ones all
    go), at most PIPELINE in all; messages of a stopped key are left untried. Both parts stay
    in id order."""
    wave: list[Row] = []
    rest: list[Row] = []
    counts: dict[str, int] = {}
    for message in pending:
        key = message.key
        if key and key in stopped:
            outcomes.untried.append(message)
        elif len(wave) >= PIPELINE or (key and counts.get(key, 0) >= per_key):
            rest.append(message)
        else:
            counts[key] = counts.get(key, 0) + 1
            wave.append(message)
    return wave, rest


def outgoing(message: Row, destinations: Mapping[str, str | None]) -> Outgoing:
    """The wire form of ``message``: JSON body, its headers plus the relay's own."""
    headers = {
        **message.headers,
        "X-Skipqueue-Topic": message.topic,
        "X-Skipqueue-Outbox-Id": str(message.pk),
        "X-Skipqueue-Attempt": str(message.attempts),
    }
    if message.owner is not None:
        # The claim that published it before ended without recording the broker's answer
        # (it died, or lost its connection or its lease): this may be a duplicate.
        headers["X-Skipqueue-Resent"] = f"unsettled claim {message.owner}"
    destination = destinations.get(message.topic) or message.topic
    # The payload's JSON as stored (compact, see models.CompactJSONEncoder): no re-encoding.
    return Outgoing(message.message_id, destination, message.key, message.body.encode(), headers)
