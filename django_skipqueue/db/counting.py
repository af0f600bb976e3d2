"""Counts that stay cheap on a table of millions of rows: capped exact, or estimated.

An exact COUNT(*) reads every matching index entry. Status and purge progress only need
"how many, roughly, once it is large": count exactly up to a cap (an index range scan that
stops there), and past it ask the optimizer's estimate, and say that it is one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import QuerySet


@dataclass(frozen=True)
class Count:
    value: int
    #: True when ``value`` is the optimizer's estimate rather than an exact count.
    approximate: bool = False

    def __str__(self) -> str:
        return f"~{self.value:,}" if self.approximate else f"{self.value:,}"


def capped_count(queryset: QuerySet[Any, Any], cap: int) -> Count:
    """Count ``queryset`` exactly up to ``cap`` rows; beyond that, estimate (marked)."""
    exact = queryset.order_by().values("pk")[: cap + 1].count()
    if exact <= cap:
        return Count(exact)
    return Count(max(estimate_count(queryset), cap + 1), approximate=True)


def estimate_count(queryset: QuerySet[Any, Any]) -> int:
    """Return the optimizer's estimate of the rows ``queryset`` matches (exact on SQLite)."""
    using = queryset.db
    vendor = connections[using].vendor
    if vendor == "mysql":
        return _mysql_estimate(queryset, using)
    if vendor == "postgresql":
        return _postgres_estimate(queryset, using)
    return queryset.count()


def _mysql_estimate(queryset: QuerySet[Any, Any], using: str) -> int:
    sql, params = queryset.order_by().values("pk").query.get_compiler(using=using).as_sql()
    with connections[using].cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        columns = [column[0] for column in cursor.description]
        row = dict(zip(columns, cursor.fetchone(), strict=True))
    # rows: entries the chosen access path reads; filtered: the share expected to match.
    return int(float(row.get("rows") or 0) * float(row.get("filtered") or 100) / 100)


def _postgres_estimate(queryset: QuerySet[Any, Any], using: str) -> int:
    sql, params = queryset.order_by().values("pk").query.get_compiler(using=using).as_sql()
    with connections[using].cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        (plan,) = cursor.fetchone()
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])
