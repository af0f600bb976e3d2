"""StartedLog: which of a worker process's held jobs had started, readable after it died.

A worker process holds more jobs than it runs: jobs claimed ahead (``--prefetch``) wait for a
thread, and finished ones wait for their outcome's batch. When the process dies (a task calls
``os._exit``, a ``kill -9``, the OOM killer), its supervisor takes every held job back. A job
that had started spends its attempt (it may be what killed the process, and it may have done
part of its work); one that never started must not, or one bad task fails the innocent jobs
its process held with ``WorkerDied``.

The database cannot tell them apart without a write per job as it starts, a round trip on the
hot path. The supervisor can: before it forks a worker it maps a small block of memory shared
with the child, one 8-byte slot per job the child may hold. The worker's main thread gives
each held job a slot; the job's thread writes the job's id into it just before the task
begins (a store into memory, no system call); the slot is cleared once the job's outcome is
written or the job given back. The memory outlives the child, so the supervisor reads, after
``waitpid``, the ids of the held jobs that had started.

Slot 0 is a flag: set when a job found no free slot, which makes the log say "unknown" and
every held job spend its attempt, as before. A worker run without a supervisor (from code)
has no log. The reaper, which takes back leases that expired (a supervisor or a host that
died with its workers), has no log either: it spends the attempt of every job it takes.
"""

from __future__ import annotations

import mmap
import struct

#: Bytes per slot: a job id (BIGINT).
SLOT = struct.calcsize("q")
#: Free slots kept beyond threads + jobs claimed ahead (stuck threads, outcomes in flight).
SPARE_SLOTS = 16


class StartedLog:
    """Slots shared by a supervisor and one worker process it forks (see the module)."""

    def __init__(self, slots: int) -> None:
        self.memory = mmap.mmap(-1, (slots + 1) * SLOT)  # anonymous and shared: survives fork
        self.ids = memoryview(self.memory).cast("q")
        #: Free slots, used by the worker's main thread only.
        self.free = list(range(slots, 0, -1))

    def take(self) -> int | None:
        """Give a held job a slot (the worker's main thread); None, and the log is then
        unknown, when none is free."""
        if self.free:
            return self.free.pop()
        self.ids[0] = 1
        return None

    def mark(self, slot: int | None, job_id: int) -> None:
        """Note that the job in ``slot`` starts (its own thread, before the task runs)."""
        if slot is not None:
            self.ids[slot] = job_id

    def give(self, slot: int | None) -> None:
        """Free ``slot`` once its job's outcome is written or the job given back."""
        if slot is not None:
            self.ids[slot] = 0
            self.free.append(slot)

    def started(self) -> frozenset[int] | None:
        """Return the ids of the held jobs that had started; None if that is unknown."""
        if self.ids[0]:
            return None
        return frozenset(job_id for job_id in self.ids[1:] if job_id)

    def close(self) -> None:
        self.ids.release()
        self.memory.close()


def log_size(threads: int, prefetch: int | None, max_auto_prefetch: int) -> int:
    """Slots for a worker of ``threads`` that holds up to ``prefetch`` more (None: adaptive)."""
    ahead = max_auto_prefetch if prefetch is None else prefetch
    return threads + ahead + SPARE_SLOTS
