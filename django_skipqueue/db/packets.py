"""Statements that fit the server's ``max_allowed_packet``: bulks cut by bytes, not only rows.

MySQL and MariaDB refuse a statement longer than ``max_allowed_packet`` (16 MiB by default)
with error 1153, and a multi-row INSERT holds its rows' values as quoted text: a thousand
calls of 200 KB each is a 200 MB statement, refused whole. A bulk is cut wherever the next
row would take its statement past the limit. Sizes are upper bounds worked out from lengths
(no second encoding): a quoted ASCII character takes at most two bytes (``\\``, ``'`` and
``"`` are escaped), any other at most four. PostgreSQL binds values outside the SQL text
and SQLite's limit is a gigabyte: there bulks are cut by rows only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

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


def json_bytes(value: Any) -> int:
    """An upper bound of the bytes ``value`` takes quoted as JSON text (one encoding)."""
    return 2 * len(json.dumps(value)) + 2  # ensure_ascii: the text is ASCII


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
