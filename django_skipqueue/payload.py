"""Task arguments are JSON and nothing else: checked, measured and refused before any INSERT."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django_skipqueue.exceptions import InvalidPayload, PayloadTooLarge

#: ``json.dumps(value, separators=(",", ":"))`` without building an encoder on every call.
_COMPACT = json.JSONEncoder(separators=(",", ":"))
#: The same, leaving non-ASCII characters as they are: its text encodes to UTF-8 only if
#: every string is Unicode text (no lone surrogate).
_UNESCAPED = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
#: The most lists and dicts nested in each other in a stored ``args`` array or ``kwargs``
#: object, the array or object itself counting as the first: an argument may nest 30 more.
#: MariaDB refuses JSON whose arrays and objects nest 32 deep (MySQL 8 at 100, PostgreSQL
#: and SQLite deeper still); the same limit holds on every database.
MAX_DEPTH = 31
#: The escape of U+0000 in JSON text (after an even number of backslashes: not ``\\u0000``).
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def normalize_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list, dict]:
    """Return ``args`` and ``kwargs`` as plain JSON values, or raise InvalidPayload.

    Tuples become lists (as in ``django.tasks``); anything JSON cannot carry unchanged
    (objects, bytes, non-string keys, NaN, nesting deeper than MAX_DEPTH) is refused rather
    than silently converted.
    """
    try:
        return _plain(list(args), 1), _plain(dict(kwargs), 1)
    except (InvalidPayload, RecursionError):
        pass  # walked again below, to say where
    try:
        return _to_json(list(args), "args", 1), _to_json(dict(kwargs), "kwargs", 1)
    except RecursionError as error:  # a Mapping whose items() recurses, say
        raise InvalidPayload(f"Task arguments nest too deep to encode: {error}.") from error


#: Types whose values are JSON as they are (subclasses go through :func:`_to_json`).
_AS_THEY_ARE = frozenset({str, int, bool, type(None)})


def _plain(value: Any, depth: int) -> Any:
    """:func:`_to_json` for the plain built-in types, without naming each value's place.

    The place (``args[0]['id']``) is only needed for an error: building it for every value
    cost as much as the rest of the walk. Anything else goes to :func:`_to_json`; a refusal
    is then explained by walking again with the places.
    """
    kind = type(value)
    if kind in _AS_THEY_ARE or (kind is float and math.isfinite(value)):
        return value
    if kind is list or kind is tuple:
        if depth > MAX_DEPTH:
            raise InvalidPayload("too deep")
        return [_plain(item, depth + 1) for item in value]
    if kind is dict:
        if depth > MAX_DEPTH:
            raise InvalidPayload("too deep")
        plain = {key: _plain(item, depth + 1) for key, item in value.items()}
        if not all(type(key) is str for key in plain):
            raise InvalidPayload("a key is not a string")
        return plain
    return _to_json(value, "", depth)


def check_size(args: list, kwargs: dict, limit: int) -> int:
    """Return the encoded size of the payload in bytes, or raise PayloadTooLarge (over
    ``limit``) or InvalidPayload (a lone surrogate, which no database stores as text)."""
    # ensure_ascii (the default) escapes every non-ASCII character: characters are bytes.
    encoded = _COMPACT.encode([args, kwargs])
    size = len(encoded)
    if size > limit:
        raise PayloadTooLarge(
            f"Task arguments are {size} bytes of JSON, over the {limit} byte limit "
            "(SKIPQUEUE_MAX_PAYLOAD_BYTES). Store large data elsewhere and pass its key."
        )
    if "\\ud" in encoded:  # a surrogate's escape; else none (one scan of the text in C)
        _refuse_lone_surrogates([args, kwargs])
    if "\\u0000" in encoded and _NUL.search(encoded):
        raise InvalidPayload(
            "Task arguments hold a NUL character (U+0000), which PostgreSQL's JSON cannot "
            "store; refused on every database, so that a payload stored on one is stored on "
            "all. Pass text without it (encode binary data, with base64 say)."
        )
    return size


def unstorable_json(value: Any, encoded: str) -> str | None:
    """Say what keeps a JSON document from being stored alike on every database, or None.

    ``encoded`` is ``value`` as ASCII JSON (``json.dumps``'s default). The same rules as for
    task arguments: no lone surrogate, no NUL, at most MAX_DEPTH lists and dicts nested.
    """
    if "\\ud" in encoded:
        text = _UNESCAPED.encode(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return f"holds the lone surrogate {text[error.start : error.end]!r}: not Unicode text"
    if "\\u0000" in encoded and _NUL.search(encoded):
        return "holds a NUL character (U+0000), which PostgreSQL's JSON cannot store"
    if encoded.count("[") + encoded.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        return f"nests lists and dicts more than {MAX_DEPTH} deep (MariaDB refuses 32)"
    return None


def _depth(value: Any) -> int:
    """How many lists and dicts nest in each other in ``value`` (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _refuse_lone_surrogates(payload: list) -> None:
    """Raise InvalidPayload if a string of ``payload`` holds a lone surrogate.

    Characters beyond the BMP are escaped as surrogate pairs too, so the escapes alone do
    not tell. UTF-8 has no encoding for a lone surrogate: MariaDB's and PostgreSQL's JSON
    refuse it, SQLite would store it as written; refused at the call on every database.
    """
    text = _UNESCAPED.encode(payload)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        found = text[error.start : error.end]
        raise InvalidPayload(
            f"Task arguments hold the lone surrogate {found!r}, after "
            f"{text[: error.start][-40:]!r} in their JSON: not Unicode text, which no database "
            "stores as JSON. Pass text only (encode binary data, with base64 say)."
        ) from None


def _to_json(value: Any, where: str, depth: int) -> Any:
    match value:
        case bool() | None | str():
            return value
        case int():
            return int(value)
        case float():
            if not math.isfinite(value):
                raise InvalidPayload(f"{where} is {value!r}, which JSON cannot represent.")
            return float(value)
        case dict() | Mapping():  # dict first: it skips the slower abstract-class check
            if depth > MAX_DEPTH:
                raise _too_deep(where)
            return {
                _key(k, where): _to_json(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()
            }
        case list() | tuple():
            if depth > MAX_DEPTH:
                raise _too_deep(where)
            return [_to_json(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise InvalidPayload(
        f"Unsupported type: {where} is a {type(value).__module__}.{type(value).__qualname__}, "
        "which is not JSON. Task arguments must be JSON: pass ids or plain values."
    )


def _too_deep(where: str) -> InvalidPayload:
    return InvalidPayload(
        f"{where[:200]} is a list or dict nested deeper than {MAX_DEPTH} levels, counting "
        "the args array or kwargs object: the most every supported database stores as JSON "
        "(MariaDB refuses 32). Flatten the arguments, or store the data elsewhere."
    )


def _key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise InvalidPayload(f"{where} has the key {key!r}; JSON object keys must be strings.")
    return key
