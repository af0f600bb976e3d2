"""Server-rendered charts: inline SVG, no JavaScript, nothing loaded from elsewhere.

Every number goes through ``format_html``; the only text placed in the SVG is numbers and
times, and it is escaped anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_skipqueue.admin.figures import MinutePoint

WIDTH = 600
HEIGHT = 120
LEFT = 64
BOTTOM = 16
TOP = 8


def throughput_chart(points: Sequence[MinutePoint], label: str) -> SafeString:
    """Stacked bars of succeeded (below) and failed (above) jobs per minute."""
    peak = max((p.succeeded + p.failed for p in points), default=0)
    scale = _nice_ceiling(peak)
    slot = (WIDTH - LEFT) / max(len(points), 1)
    bars = format_html_join("", "{}", ((_bar(i, p, slot, scale),) for i, p in enumerate(points)))
    total_ok = sum(p.succeeded for p in points)
    total_failed = sum(p.failed for p in points)
    return format_html(
        '<svg class="skipqueue-chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img" '
        'aria-label="{}: {} succeeded, {} failed in the last {} minutes">'
        "<title>{}</title>{}{}</svg>",
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        label,
        total_ok,
        total_failed,
        len(points),
        label,
        _axes(scale, points),
        bars,
    )


def _bar(index: int, point: MinutePoint, slot: float, scale: int) -> SafeString:
    x = LEFT + index * slot + 0.5
    width = max(slot - 1, 1)
    plot = HEIGHT - BOTTOM - TOP
    ok_height = plot * point.succeeded / scale
    failed_height = plot * point.failed / scale
    base = HEIGHT - BOTTOM
    tip = f"{point.minute:%H:%M} UTC: {point.succeeded} succeeded, {point.failed} failed"
    return format_html(
        '<g><title>{}</title><rect class="succeeded" x="{}" y="{}" width="{}" height="{}"/>'
        '<rect class="failed" x="{}" y="{}" width="{}" height="{}"/></g>',
        tip,
        f"{x:.1f}",
        f"{base - ok_height:.1f}",
        f"{width:.1f}",
        f"{ok_height:.1f}",
        f"{x:.1f}",
        f"{base - ok_height - failed_height:.1f}",
        f"{width:.1f}",
        f"{failed_height:.1f}",
    )


def _axes(scale: int, points: Sequence[MinutePoint]) -> SafeString:
    base = HEIGHT - BOTTOM
    first = f"{points[0].minute:%H:%M}" if points else ""
    last = f"{points[-1].minute:%H:%M}" if points else ""
    return format_html(
        '<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>'
        '<text x="{}" y="{}" text-anchor="end">{}/min</text>'
        '<text x="{}" y="{}" text-anchor="end">0</text>'
        '<text x="{}" y="{}">{}</text><text x="{}" y="{}" text-anchor="end">{}</text>',
        LEFT,
        base,
        WIDTH,
        base,
        LEFT - 4,
        TOP + 8,
        scale,
        LEFT - 4,
        base,
        LEFT,
        HEIGHT - 3,
        first,
        WIDTH,
        HEIGHT - 3,
        last,
    )


def _nice_ceiling(value: int) -> int:
    """Round the axis maximum up to 1, 2 or 5 times a power of ten (at least 1)."""
    magnitude = 1
    while True:
        for step in (1, 2, 5):
            if value <= step * magnitude:
                return step * magnitude
        magnitude *= 10
