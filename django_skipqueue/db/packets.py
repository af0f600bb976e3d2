"""Statements that fit the server's ``max_allowed_packet``: bulks cut by bytes, not only rows.

MySQL and MariaDB refuse a statement longer than ``max_allowed_packet`` (16 MiB by default)
with error 1153, and a multi-row INSERT holds its rows' values as quoted text: a thousand
calls of 200 KB each is a 200 MB statement, refused whole. A bulk is cut wherever the next
row would take its statement past the limit. Sizes are upper bounds worked out from lengths
(no second encoding): a quoted ASCII character takes at most two bytes (``\\``, ``'`` and
``"`` are escaped), any other at most four. PostgreSQL binds values outside the SQL text
and SQLite's limit is a gigabyte: there bulks are cut by rows only.

Also the byte limits against that packet: the largest result one statement carries
(workers lower SKIPQUEUE_MAX_RESULT_BYTES to it) and the check (W005) and start-up line that
name a byte setting the server cannot carry.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections

from django_skipqueue.conf import get_settings

#: Bytes of each statement left for its head (INSERT INTO, the column list, RETURNING) and
#: the protocol's framing.
HEAD_ROOM = 64 * 1024
#: At most this many bytes for a value that is not text (a number, a time, NULL) quoted.
OTHER_VALUE = 64


def packet_budget(connection: Any) -> int | None:
    """Return the bytes one statement may take on ``connection`` (None: no such limit).

    The server's ``max_allowed_packet`` less :data:`HEAD_ROOM`, read once per connection (a
    session cannot change it: its value is the global one when the connection opened).
    """
    if connection.vendor != "mysql":
        return None
    connection.ensure_connection()
    raw = connection.connection
    budget: int | None = getattr(raw, "skipqueue_packet_budget", None)
    if budget is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@max_allowed_packet")
            (limit,) = cursor.fetchone()
        budget = raw.skipqueue_packet_budget = max(int(limit) - HEAD_ROOM, int(limit) // 2)
    return budget


def quoted_bytes(value: Any) -> int:
    """An upper bound of the bytes ``value`` takes as a quoted SQL literal."""
    if isinstance(value, str):
        return (2 if value.isascii() else 4) * len(value) + 2
    if isinstance(value, bytes | bytearray):
        return 2 * len(value) + 10  # _binary'...'
    return OTHER_VALUE


def in_json_bytes(text: str) -> int:
    """An upper bound of the bytes ``text`` takes as a string inside quoted JSON text: ``\\"``
    for a quote, ``\\\\u00e9`` for a non-ASCII character (two escapes beyond the BMP)."""
    return (4 if text.isascii() else 14) * len(text) + 8


def column_bytes(values: Sequence[Any]) -> int:
    """An upper bound of the bytes a column's values take quoted, without a Python loop when
    they are all strings (the common case: JSON text)."""
    try:
        chars = sum(map(len, values))
        per_char = 2 if all(map(str.isascii, values)) else 4
    except TypeError:  # NULLs, numbers, times or bytes among them
        return sum(map(quoted_bytes, values))
    return per_char * chars + 2 * len(values)


def cut(sizes: Iterable[int], budget: int) -> list[range]:
    """Cut rows of ``sizes`` bytes into consecutive runs of at most ``budget`` bytes each.

    A row larger than the budget goes alone: the server then refuses that statement (1153)
    with its own message, and the caller's transaction rolls the bulk back.
    """
    runs: list[range] = []
    start = total = 0
    index = -1
    for index, size in enumerate(sizes):
        if total + size > budget and index > start:
            runs.append(range(start, index))
            start, total = index, 0
        total += size
    if index >= start:
        runs.append(range(start, index + 1))
    return runs


# The byte limits of results and payloads against the server's packet.

#: What a statement that carries a result needs besides it (the rest of the UPDATE), in bytes.
PACKET_MARGIN = 64 * 1024


def max_allowed_packet(using: str) -> int | None:
    """Return the server's ``max_allowed_packet``; None where there is no such limit."""
    connection = connections[using]
    if connection.vendor != "mysql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        return int(cursor.fetchone()[0])


def result_bound(limit: int, packet: int | None) -> int:
    """Return the largest result, in bytes of JSON, that one statement can carry.

    ``limit`` is SKIPQUEUE_MAX_RESULT_BYTES and ``packet`` the server's max_allowed_packet:
    in the statement's text, a byte of JSON may take two (a quote or a backslash, escaped).
    """
    if packet is None:
        return limit
    return max(1, min(limit, (packet - PACKET_MARGIN) // 2))


def byte_limits_problem(using: str) -> str | None:
    """Say so when a byte limit exceeds what the server lets one statement carry.

    SKIPQUEUE_MAX_RESULT_BYTES (workers lower it to fit), SKIPQUEUE_MAX_PAYLOAD_BYTES and
    SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES (a row at its limit would be refused by the server,
    error 1153, and its whole bulk rolled back): each against the same bound, a byte of JSON
    taking up to two in the statement's text.
    """
    packet = max_allowed_packet(using)
    if packet is None:
        return None
    settings = get_settings()
    limits = {
        "SKIPQUEUE_MAX_RESULT_BYTES": settings.MAX_RESULT_BYTES,
        "SKIPQUEUE_MAX_PAYLOAD_BYTES": settings.MAX_PAYLOAD_BYTES,
        "SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES": settings.OUTBOX_MAX_PAYLOAD_BYTES,
    }
    bound = result_bound(max(limits.values()), packet)
    over = [f"{name} ({limit:,})" for name, limit in limits.items() if limit > bound]
    if not over:
        return None
    return (
        f"{' and '.join(over)} {'is' if len(over) == 1 else 'are'} more than one statement can "
        f"carry under the max_allowed_packet ({packet:,}) of database {using!r}: results are "
        f"bounded at {bound:,} bytes, and a payload above that would be refused by the server "
        "(1153). Lower the setting or raise max_allowed_packet on the server."
    )
