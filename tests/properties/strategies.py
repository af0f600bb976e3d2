"""Hostile input for the property tests: every plane, NUL, CR/LF, lone surrogates, combining
marks, strings at each length boundary in characters and in bytes, deep nesting, sizes around
each limit.

The seeds: every property test runs once with a fixed seed (the same examples in every run)
and once with a random one, which the test's id prints (``[seed=...]``) so that a failure can
be replayed with ``SKIPQUEUE_PROPERTY_SEED``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st

FIXED_SEED = 20261207
RANDOM_SEED = int(os.environ.get("SKIPQUEUE_PROPERTY_SEED") or secrets.randbelow(2**32))
#: Examples per seed: bounded so that the whole folder stays within a minute of CI.
EXAMPLES = int(os.environ.get("SKIPQUEUE_PROPERTY_EXAMPLES") or 40)

#: Characters that broke something once, or that a wire protocol or a collation treats apart.
SPECIAL = [
    "\x00", "\r", "\n", "\t", " ", "\x7f", "\x1b", "\u00a0", "\u2028", "\ufeff", "\ufffd",
    "é", "e\u0301", "É", "ß", "²", "€", "😀", "\U0010fffd", "\ud800", "\udfff",
    "*", ">", ".", "'", '"', "\\", "%", "_", "`", ";", "--", "/*", "$", "{", "}",
]  # fmt: skip
#: One character of each UTF-8 length: 1, 2, 3 and 4 bytes.
WIDTHS = ["a", "é", "€", "😀"]
#: Lengths around the columns and wire limits: 191 (keys), 200 (labels), 255 (ids, AMQP).
LENGTHS = [0, 1, 63, 64, 65, 85, 86, 100, 101, 127, 128, 190, 191, 192, 199, 200, 201, 254, 255,
           256]  # fmt: skip

characters = st.one_of(
    st.characters(exclude_categories=()),  # every plane, lone surrogates included
    st.sampled_from([c for c in SPECIAL if len(c) == 1]),
)
#: Any text: short strings of hostile characters, or one character repeated to a boundary.
hostile_text = st.one_of(
    st.text(characters, max_size=12),
    st.builds(lambda c, n: c * n, st.sampled_from(WIDTHS + SPECIAL), st.sampled_from(LENGTHS)),
    st.builds(
        lambda c, n, tail: c * n + tail,
        st.sampled_from(WIDTHS),
        st.sampled_from(LENGTHS),
        st.text(characters, min_size=1, max_size=3),
    ),
)


def nested(depth: int, leaf: Any = 1) -> Any:
    """A list nested ``depth`` levels deep around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
)
#: JSON-like values with hostile text and numbers, plus nesting around the servers' depths.
json_values = st.one_of(
    st.recursive(
        json_leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
        ),
        max_leaves=12,
    ),
    st.builds(nested, st.sampled_from([30, 31, 32, 33, 64, 99, 100, 101, 5000])),
)


def text_of_bytes(size: int) -> str:
    """An ASCII string whose JSON text is exactly ``size`` bytes (quotes included)."""
    return "x" * max(size - 2, 0)


def seeded(test: Callable[..., Any]) -> Any:
    """Run ``test`` (a function taking ``seed_value``) under both seeds, with bounded examples."""
    return pytest.mark.parametrize(
        "seed_value", [FIXED_SEED, RANDOM_SEED], ids=lambda value: f"seed={value}"
    )(test)


def run(seed_value: int, body: Callable[..., None], *strategies: Any, examples: int = 0) -> None:
    """Run the Hypothesis test ``body`` over ``strategies`` with ``seed_value``."""
    from hypothesis import given

    configured = settings(
        max_examples=examples or EXAMPLES,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    seed(seed_value)(configured(given(*strategies)(body)))()
