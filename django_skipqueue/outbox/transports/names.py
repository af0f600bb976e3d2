"""What a broker takes as a name or a header: checked by publish(), the system checks and, for
rows stored before these checks, by the transports themselves.

A key becomes an AMQP routing key and a NATS subject token, a topic's destination an exchange
or a subject: AMQP short strings hold at most 255 *bytes* of UTF-8, and in a NATS subject a
space, a tab or CR/LF ends the subject (what follows is read as protocol) while ``*`` and
``>`` are wildcards. Header values travel in NATS's text header block, where CR/LF would end
the header and leading or trailing blanks are trimmed. Each function returns what is wrong, as
a sentence fragment naming the character and its position, or None.
"""

from __future__ import annotations

import re

#: AMQP 0-9-1 short strings (routing key, exchange, message id, header names), in bytes.
MAX_SHORT_STRING_BYTES = 255

# \s: every Unicode blank; \x00-\x1f\x7f-\x9f: control characters; lone surrogates cannot
# be encoded as UTF-8 at all.
_NOT_IN_SUBJECT = re.compile(r"[\s\x00-\x1f\x7f-\x9f*>\ud800-\udfff]")
_NOT_IN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
# RFC 9110 token characters, as NATS headers (and HTTP) take them.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def subject_problem(text: str) -> str | None:
    """What keeps ``text`` from being a routing key or a NATS subject (or token), or None."""
    return characters_problem(text) or length_problem(text)


def characters_problem(text: str) -> str | None:
    """The first character of ``text`` that a NATS subject cannot hold, or None.

    A whole subject (destination and key, up to 511 bytes) is far under NATS's 4096-byte
    control line: only its characters are checked.
    """
    bad = _NOT_IN_SUBJECT.search(text)
    if bad is not None:
        return f"holds {_character(bad.group())} at position {bad.start()}"
    return None


def header_name_problem(name: str) -> str | None:
    """What keeps ``name`` from being a header name on both brokers, or None."""
    if _HEADER_NAME.fullmatch(name):
        return length_problem(name)
    if not name:
        return "is empty"
    position = next(i for i, c in enumerate(name) if not _HEADER_NAME.fullmatch(c))
    return (
        f"holds {_character(name[position])} at position {position} (header names are "
        "letters, digits and !#$%&'*+-.^_`|~)"
    )


def header_value_problem(value: str) -> str | None:
    """What keeps ``value`` from reaching a consumer unchanged as a header value, or None."""
    bad = _NOT_IN_VALUE.search(value)
    if bad is not None:
        return f"holds {_character(bad.group())} at position {bad.start()}"
    if value != value.strip():  # every Unicode blank: a no-break space is trimmed too
        return "starts or ends with a blank (NATS trims it)"
    return None


def length_problem(text: str) -> str | None:
    """``text`` over an AMQP short string's 255 bytes of UTF-8, or None."""
    # Four bytes at most per character: a short text needs no encoding to be measured.
    if len(text) * 4 <= MAX_SHORT_STRING_BYTES:
        return None
    try:
        size = len(text.encode())
    except UnicodeEncodeError as error:
        return f"is not UTF-8 ({error.reason} at position {error.start})"
    if size > MAX_SHORT_STRING_BYTES:
        return f"is {size} bytes of UTF-8, over {MAX_SHORT_STRING_BYTES}"
    return None


def _character(char: str) -> str:
    """``char`` as an error shows it: visible, with its code point."""
    return f"{char!r} (U+{ord(char):04X})"
