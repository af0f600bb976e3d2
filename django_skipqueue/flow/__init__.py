"""Flow control: per-key concurrency limits, ordered sequences and rate limits.

A job of a task with flow options carries a ``flow_key`` and is inserted BLOCKED, a status the
claim index's ``('ready', queue)`` range never holds. The key's ``FlowKey`` row is the
semaphore: every transaction that takes a slot (``admit``) or gives one back (a job's end,
through ``transitions.py``) locks it first, then admits the oldest blocked jobs of the key
that the slots and the rate window allow, through the ``skipqueue_waiting`` index. The plain
claim is not changed at all: admitted jobs are plain READY rows. Every start passes
admission: a retried job waits BLOCKED again, and one that holds a slot keeps it and waits in
its key's ``blocked_holders`` for the rate window alone.

``options`` reads and checks the task options, ``slots`` the bookkeeping of a key's slots and
rate window (below ``transitions.py``: it imports no transition), ``admission`` the keyed
enqueue and the flow timer (above it), and ``status`` the figures of ``skipqueue_status`` and
the admin. Must not import ``worker``,
``maintenance``, ``admin`` or ``management``.
"""
