"""Check docs/howto/prometheus.md: a real Prometheus, configured with the page's scrape jobs,
scrapes both targets and its figures equal the database's after the running workers did jobs.

The page's ``prometheus.yml`` gets a short scrape interval (a global section added in front);
its targets and token file are the test's stand-ins for the page's hosts.
"""

import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

from checks.chores import ping
from checks.common import wait_until

from django_skipqueue.models import Job

JOBS = 12
Path("skipqueue-token").write_text(os.environ["SKIPQUEUE_METRICS_TOKEN"])
config = Path("prometheus.yml")
SHORT_INTERVAL = "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n"
config.write_text(SHORT_INTERVAL + config.read_text())
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
server = subprocess.Popen(
    [
        shutil.which("prometheus") or "/usr/bin/prometheus",
        f"--config.file={config.resolve()}",
        f"--storage.tsdb.path={Path('prometheus-data').resolve()}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.STDOUT,
)


def query(expression: str) -> dict[str, float]:
    """The instant value of ``expression`` per job label ("" when the result has none)."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            result = json.load(response)["data"]["result"]
    except OSError:
        return {}
    return {item["metric"].get("job", ""): float(item["value"][1]) for item in result}


def stable(expression: str, expected: dict[str, float], what: str) -> None:
    """Wait until ``expression`` reads ``expected`` in three scrapes in a row (a momentary
    read of a loaded machine's scrape may miss a target)."""
    seen: list[dict[str, float]] = []

    def settled() -> bool:
        seen.append(query(expression))
        return seen[-3:] == [expected] * 3

    try:
        wait_until(settled, timeout=60, what=f"{what}: {expected}")
    except AssertionError as error:
        raise AssertionError(f"{error}; the last reads: {seen[-3:]}") from None


try:
    for number in range(JOBS):
        ping.enqueue(number)
    wait_until(lambda: Job.objects.filter(status="succeeded").count() == JOBS, what="the jobs")
    up = {"skipqueue-workers": 1.0, "skipqueue-queue": 1.0}
    stable("up", up, "both targets up")
    stable('sum(skipqueue_workers{state="live"})', {"": 2.0}, "the view's live workers")
    stable("sum(skipqueue_worker_processes)", {"": 2.0}, "the supervisor's processes")
    stable(
        'sum(skipqueue_attempts_total{outcome="succeeded"})',
        {"": float(JOBS)},
        "the workers' succeeded attempts",
    )
    stable('sum(skipqueue_jobs{status="ready"})', {"": 0.0}, "the view's ready jobs")
finally:
    server.terminate()
    server.wait(timeout=30)
