"""The seam through which optional apps plug into the core: one base class of named hooks.

An app's ``AppConfig`` inherits :class:`Extension` and overrides the hooks it needs; each
default adds nothing. The core (the maintenance loop, ``skipqueue_status``,
``skipqueue_health``, ``runworkers`` and its supervisor, the Prometheus view, the dashboard and
the system checks) calls :func:`extensions` and iterates: it never imports or names an app, so
removing one from ``INSTALLED_APPS`` removes its sections, checks, gauges, panels and
processes, and nothing else. This is the shape of pytest's hook specs and of Django's own
``AppConfig.ready()``: the hook is named here once, each app implements it, the core calls all.

Hooks run in the process that calls them; each imports what it needs inside its body, so that
an app's heavy or optional dependencies (a broker client, ``prometheus-client``) are imported
only when that hook runs. Listeners called inside the transaction that records a job's outcome
are not hooks of this class: transitions own that list (see ``docs/reference/extensions.md``).
"""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from django.apps import apps


class MaintenanceStep(NamedTuple):
    """A step the maintenance loop of every supervisor runs every ``interval`` seconds."""

    name: str
    interval: float
    run: Callable[[], object]


@dataclass(frozen=True)
class StatusSection:
    """An app's part of ``skipqueue_status``: ``data`` under ``key`` in ``--json``, ``text``
    printed as it is in the table output."""

    key: str
    data: Any
    text: str


@dataclass(frozen=True)
class HealthCheck:
    """One check of ``skipqueue_health``, failing with ``status`` (its value is the exit status).

    ``add_arguments`` adds the command-line options the check reads (its thresholds);
    ``problems(using, options)`` returns the reason of each problem found, none when healthy.
    A ``DatabaseError`` it raises makes the command say it cannot check (exit status 1).
    """

    status: IntEnum
    describe: str
    problems: Callable[[str, Mapping[str, Any]], list[str]]
    add_arguments: Callable[[ArgumentParser], None] = lambda parser: None


@dataclass(frozen=True)
class Panel:
    """A dashboard panel: ``template`` rendered with ``context`` (as ``panel.context``).

    A ``"section"`` panel is a module of its own after the database's; a ``"row"`` panel is
    rows of the table of flow keys and blocked jobs, under ``title`` in its heading.
    """

    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    place: str = "section"
    title: str = ""


@dataclass(frozen=True)
class SideProcess:
    """A process ``runworkers`` runs next to its workers (the slot after theirs), restarted as
    they are. ``run(using, burst)`` runs in the forked child and returns its exit status."""

    name: str
    run: Callable[[str, bool], int]


class Extension:
    """The hooks of an optional app; mix into its ``AppConfig``. Each default adds nothing."""

    def maintenance_steps(self, using: str) -> list[MaintenanceStep]:
        """Steps the maintenance loop of database ``using`` runs for this app."""
        return []

    def status_sections(self, using: str) -> list[StatusSection]:
        """This app's sections of ``skipqueue_status`` for database ``using``."""
        return []

    def health_checks(self) -> list[HealthCheck]:
        """This app's checks of ``skipqueue_health`` (each with its exit status)."""
        return []

    def metrics(self, using: str) -> Iterable[Any]:
        """Prometheus metric families read at scrape time (``prometheus_client`` Metrics)."""
        return []

    def dashboard_panels(self, using: str) -> list[Panel]:
        """This app's panels of the admin's queue dashboard."""
        return []

    def runworkers_arguments(self, parser: ArgumentParser) -> None:
        """Add this app's options to ``runworkers`` (``--relay``)."""

    def side_processes(self, options: Mapping[str, Any]) -> list[SideProcess]:
        """Processes ``runworkers`` runs for this app, given its parsed options.

        Raise ``CommandError`` for an option that cannot be honoured (the app's own wording).
        """
        return []

    def databases(self) -> set[str]:
        """Database aliases that hold this app's tables (checked for unapplied migrations)."""
        return set()


def extensions() -> list[Extension]:
    """The installed apps that plug into the core, in ``INSTALLED_APPS`` order."""
    return [config for config in apps.get_app_configs() if isinstance(config, Extension)]
