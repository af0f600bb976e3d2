"""Cells the optional apps' lists share, so that each list fits a 1400 px window.

Times read as on the job pages (UTC, to the second, ``detail.moment``) and may wrap between
date and time; long text is cut with the whole of it in a title; dotted paths wrap after their
dots. Everything is escaped by ``format_html``.
"""

from __future__ import annotations

import re
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from django_skipqueue.admin.detail import EMPTY, moment

#: Characters of a long text shown in a list cell; the title holds all of it.
CLIPPED = 60
#: Characters of a word that may wrap inside (after its dots, slashes, colons and ``@``).
LONG_WORD = 20


def when(value: datetime | None) -> SafeString:
    """Render a time in UTC to the second, the job pages' format, in a <time> element."""
    if value is None:
        return format_html("{}", EMPTY)
    day, clock = moment(value).split(" ")
    return format_html(
        '<time datetime="{}"><span>{}</span> <span>{}</span></time>', value.isoformat(), day, clock
    )


def clipped(text: str, length: int = CLIPPED) -> SafeString:
    """Render ``text`` cut to ``length`` characters, the whole of it in a title.

    A word longer than ``LONG_WORD`` may wrap after its dots, slashes, colons and ``@``:
    routing keys, URLs and host names are long words.
    """
    if len(text) <= length:
        return format_html('<span class="skipqueue-clipped">{}</span>', _breakable(text) or EMPTY)
    shown = _breakable(text[: length - 1])
    return format_html('<span class="skipqueue-clipped" title="{}">{}…</span>', text, shown)


def dotted(path: str) -> SafeString:
    """Render a path (dotted, or a time zone's) that may wrap after its dots, underscores and
    slashes, never inside a name."""
    return _joined(re.split(r"(?<=[._/])", path))


def _breakable(text: str) -> SafeString:
    words = re.split(r"(\s+)", text)
    return format_html_join("", "{}", ((_long_word(word),) for word in words))


def _long_word(word: str) -> SafeString | str:
    return _joined(re.split(r"(?<=[._/:@])", word)) if len(word) > LONG_WORD else word


def _joined(parts: list[str]) -> SafeString:
    return format_html_join(mark_safe("<wbr>"), "{}", ((part,) for part in parts))


def noted(value: object, note: str | SafeString) -> SafeString:
    """Render a value with a quieter line below it (what it means, when it changes)."""
    if not note:
        return format_html("{}", value)
    return format_html('{}<span class="skipqueue-status-note">{}</span>', value, note)
