"""Task arguments are JSON and nothing else: checked, measured and refused before any INSERT."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from django_skipqueue.exceptions import InvalidPayload, PayloadTooLarge

#: ``json.dumps(value, separators=(",", ":"))`` without building an encoder on every call.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def normalize_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list, dict]:
    """Return ``args`` and ``kwargs`` as plain JSON values, or raise InvalidPayload.

    Tuples become lists (as in ``django.tasks``); anything JSON cannot carry unchanged
    (objects, bytes, non-string keys, NaN) is refused rather than silently converted.
    """
    return _to_json(list(args), "args"), _to_json(dict(kwargs), "kwargs")


def check_size(args: list, kwargs: dict, limit: int) -> int:
    """Return the encoded size of the payload in bytes, or raise PayloadTooLarge."""
    # ensure_ascii (the default) escapes every non-ASCII character: characters are bytes.
    size = len(_COMPACT.encode([args, kwargs]))
    if size > limit:
        raise PayloadTooLarge(
            f"Task arguments are {size} bytes of JSON, over the {limit} byte limit "
            "(SKIPQUEUE_MAX_PAYLOAD_BYTES). Store large data elsewhere and pass its key."
        )
    return size


def _to_json(value: Any, where: str) -> Any:
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
            return {_key(k, where): _to_json(v, f"{where}[{k!r}]") for k, v in value.items()}
        case list() | tuple():
            return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise InvalidPayload(
        f"Unsupported type: {where} is a {type(value).__module__}.{type(value).__qualname__}, "
        "which is not JSON. Task arguments must be JSON: pass ids or plain values."
    )


def _key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise InvalidPayload(f"{where} has the key {key!r}; JSON object keys must be strings.")
    return key
