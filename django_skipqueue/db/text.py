"""Text that every supported database stores as given: no NUL, no lone surrogate.

PostgreSQL refuses NUL in text; no database can store a lone surrogate (it has no UTF-8
form). A caller's label or key holding either is refused at the call, the same way on every
database, rather than failing in the driver with an error the caller cannot tell from a fault.
"""

from __future__ import annotations


def unstorable(value: str) -> str | None:
    """Say what in ``value`` no database stores as text (and where), or None if all of it is."""
    if "\x00" in value:
        return f"NUL at {value.index(chr(0))}"
    try:
        value.encode()
    except UnicodeEncodeError as error:
        return f"the lone surrogate {value[error.start]!r} at {error.start}"
    return None
