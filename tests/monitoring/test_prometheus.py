"""A real Prometheus scrapes the metrics view and ``runworkers --metrics-port`` while jobs drain.

Its figures, read back through its HTTP API, must equal the database's: depth before and after,
succeeded attempts and job-duration observations equal to the succeeded rows, claims equal to
the attempts the rows record, reclaims equal to the attempts dead workers held. Worker children
die by SIGKILL midway and are replaced: their counts stay (no loss), their replacements start
their own (no double count), and their process gauges go (two processes, not four).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import Count
from django.urls import reverse

from django_skipqueue.models import Job
from tests.support import worker_tasks as wt
from tests.support.prometheus import Prometheus, free_port
from tests.support.steady import steady_equal
from tests.support.workers import Runworkers, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skip_locked,
    pytest.mark.vendor_neutral,
]
TOKEN = "scrape-token-for-tests"
DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The dashboard's panels that the issue asks for: depth and age per queue, throughput, claim
#: latency percentiles, reclaims (its errors panel has no series in a run without errors).
ASKED_PANELS = (
    "Ready jobs per queue (depth)",
    "Oldest ready job (age)",
    "Throughput (attempts per second)",
    "Claim latency",
    "Reclaims and lost leases",
)
JOBS = 240


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of the Grafana dashboard, its variables filled in
    as Grafana would: every queue, a one-minute rate window."""
    dashboard = json.loads((DOCS / "grafana" / "skipqueue-dashboard.json").read_text())
    return [
        (panel["title"], target["expr"].replace("$queue", ".*").replace("$__rate_interval", "1m"))
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def listening_address(port: int) -> str:
    """The local address a TCP socket listens on at ``port``, from /proc/net/tcp(6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if int(hex_port, 16) == port and state == "0A":
                return address
    raise AssertionError(f"nothing listens on port {port}")


def finished() -> dict[str, int]:
    rows = Job.objects.filter(status__in=["succeeded", "failed"]).values_list("status")
    return dict(rows.annotate(n=Count("id")).order_by())


def reclaimed_jobs() -> int:
    died = 0
    for errors in Job.objects.values_list("errors", flat=True):
        died += sum(1 for e in errors if e["exception_class_path"].endswith("WorkerDied"))
    return died


@pytest.fixture
def metrics_token(settings):
    settings.SKIPQUEUE_METRICS_TOKEN = TOKEN
    return TOKEN


def test_prometheus_figures_equal_the_database_across_a_killed_worker(
    backend, child_env, manage_py, tmp_path, live_server, metrics_token
):
    # The middle job kills its own worker process, twice (two attempts): each time the
    # supervisor reclaims it and forks a replacement. With one thread per process and no jobs
    # claimed ahead (--prefetch 0), a worker is waiting on that job when it dies, every
    # earlier outcome counted: the totals are exact. (Claiming ahead, a job may start on its
    # thread while the loop records and flushes: docs/reference/metrics.md says what a kill
    # may then lose.)
    half = [(wt.slow_record, [0.01], {})] * (JOBS // 2)
    backend.enqueue_many([*half, (wt.kill_own_process, [], {}), *half])
    port = free_port()
    view = live_server.url.removeprefix("http://")
    prometheus = Prometheus(
        tmp_path,
        {
            "queue": {
                "metrics_path": reverse("skipqueue_metrics"),
                "authorization": {"credentials": metrics_token},
                "static_configs": [{"targets": [view]}],
            },
            "workers": {"static_configs": [{"targets": [f"127.0.0.1:{port}"]}]},
        },
    )
    workers = None
    try:
        ready = 'skipqueue_jobs{queue="default",status="ready"}'
        # A query of Prometheus that times out on a loaded machine is read again (reads=1).
        steady_equal(lambda: prometheus.value(ready), JOBS + 1, "depth scraped", 30, reads=1)
        workers = Runworkers(
            manage_py, child_env, tmp_path / "workers.log",
            "--processes", "2", "--threads", "1", "--prefetch", "0", "--queues", "default",
            "--metrics-port", str(port),
        )  # fmt: skip
        wait_for(lambda: Job.objects.filter(status="succeeded").count() >= 10, 60)
        assert listening_address(port) == "0100007F"  # 127.0.0.1, not every interface
        # Every job finished, the killer too (its retry may run after the others): the rows
        # and the supervisor's log are final only then.
        wait_for(lambda: finished() == {"succeeded": JOBS, "failed": 1}, 180, 0.2, "all done")
        death = "reason=signal SIGKILL restart_in="
        steady_equal(lambda: workers.log().count(death), 2, "worker deaths logged", timeout=30)

        succeeded = 'sum(skipqueue_attempts_total{outcome="succeeded"})'
        steady_equal(lambda: prometheus.value(succeeded), JOBS, "final counts", 30, reads=1)
        attempts = sum(Job.objects.values_list("attempts", flat=True))
        assert attempts == JOBS + 2 and reclaimed_jobs() == 2
        # The figures must hold still, both targets up, over consecutive reads: one read may
        # meet a scrape of the live server that timed out on a loaded machine (target down,
        # its series stale for a moment).
        values = {
            succeeded: JOBS,
            "sum(skipqueue_job_duration_seconds_count)": JOBS,
            "sum(skipqueue_jobs_claimed_total)": attempts,
            "sum(skipqueue_jobs_reclaimed_total)": 2,
            "sum(skipqueue_attempts_total)": JOBS,
            "skipqueue_worker_processes": 2,  # not the dead ones
            ready: 0,
            'skipqueue_jobs{queue="default",status="claimed"}': 0,
            'skipqueue_jobs{queue="default",status="failed"}': 1,
            'skipqueue_workers{state="live"}': 2,
        }
        expected = {
            "up": {"queue": 1.0, "workers": 1.0},
            **values,
            # One thread: one job per claim at most.
            "claims >= attempts, one batch size each": "yes",
            # The dashboard's queries, run by this Prometheus: each is valid PromQL (query()
            # fails on an error), and the panels the issue asks for plot this run's series.
            "asked panels without series": [],
        }
        steady_equal(lambda: figures(prometheus, list(values), attempts), expected, "figures")
    finally:
        prometheus.stop()
        if workers is not None:
            workers.stop()


def figures(prometheus: Prometheus, expressions: list[str], attempts: int) -> dict[str, Any]:
    """What Prometheus says now: targets up, each of ``expressions``, claims, the dashboard."""
    read: dict[str, Any] = {"up": prometheus.targets_up()}
    read.update({expression: prometheus.value(expression) for expression in expressions})
    claims = prometheus.value("sum(skipqueue_claim_duration_seconds_count)")
    batches = prometheus.value("sum(skipqueue_claim_batch_size_count)")
    claimed_right = claims is not None and claims >= attempts and claims == batches
    read["claims >= attempts, one batch size each"] = (
        "yes" if claimed_right else f"claims={claims} batch sizes={batches} attempts={attempts}"
    )
    series: dict[str, int] = dict.fromkeys(ASKED_PANELS, 0)
    for title, expression in dashboard_expressions():
        series[title] = series.get(title, 0) + len(prometheus.query(expression))
    read["asked panels without series"] = [title for title in ASKED_PANELS if not series[title]]
    return read


def test_the_view_refuses_anonymous_and_wrong_tokens(client, metrics_token):
    url = reverse("skipqueue_metrics")
    assert client.get(url).status_code == 403
    assert client.get(url, HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get(url, HTTP_AUTHORIZATION=f"Basic {metrics_token}").status_code == 403
    allowed = client.get(url, HTTP_AUTHORIZATION=f"Bearer {metrics_token}")
    assert allowed.status_code == 200 and b"skipqueue_jobs{" in allowed.content
    client.force_login(User.objects.create_user("someone", password="x"))
    assert client.get(url).status_code == 403
    client.force_login(User.objects.create_user("operator", password="x", is_staff=True))
    assert client.get(url).status_code == 200


def test_no_token_set_means_staff_only(client, settings):
    settings.SKIPQUEUE_METRICS_TOKEN = None
    url = reverse("skipqueue_metrics")
    assert client.get(url, HTTP_AUTHORIZATION="Bearer ").status_code == 403
    assert client.get(url, HTTP_AUTHORIZATION="Bearer None").status_code == 403


def test_the_metrics_port_refuses_a_port_in_use(child_env, manage_py, tmp_path):
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        refused = Runworkers(
            manage_py, child_env, tmp_path / "busy.log", "--burst", "--metrics-port", str(port)
        )
        try:
            assert refused.wait(60) != 0
        finally:
            refused.stop()
    assert f"cannot listen on 127.0.0.1:{port}" in refused.log()


def test_the_dashboard_plots_only_documented_metrics():
    """Every series the Grafana dashboard plots is in docs/reference/metrics.md (which lists
    exactly what the code exports: tests/monitoring/test_metric_figures.py)."""
    rows = (DOCS / "reference" / "metrics.md").read_text()
    documented = set(re.findall(r"^\| `(skipqueue_[a-z_]+)` \|", rows, re.MULTILINE))
    plotted = set()
    for _title, expression in dashboard_expressions():
        plotted |= set(re.findall(r"skipqueue_[a-z_]+", expression))
    series = {re.sub(r"_(bucket|sum|count)$", "", name) for name in plotted}
    assert series <= documented, series - documented
    assert len(series) >= 12
