"""A real Prometheus server for one test: its own config, data directory and free port.

Debian's ``prometheus`` package provides the binary (scripts/setup.sh installs it with the test
packages); the test starts it, scrapes what it is told to, and kills it. It is never the
system's service.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

#: How often the test's Prometheus scrapes; its queries see values at most this old (plus one).
SCRAPE_INTERVAL = 0.5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Prometheus:
    """A Prometheus process scraping ``jobs`` (name -> scrape config), queried over HTTP."""

    def __init__(self, directory: Path, jobs: dict[str, dict[str, Any]]) -> None:
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        if not Path(binary).exists():
            pytest.fail("the prometheus binary is missing: apt-get install prometheus")
        self.port = free_port()
        config = {
            "global": {
                "scrape_interval": f"{int(SCRAPE_INTERVAL * 1000)}ms",
                "scrape_timeout": f"{int(SCRAPE_INTERVAL * 800)}ms",
            },
            "scrape_configs": [{"job_name": name, **job} for name, job in jobs.items()],
        }
        config_file = directory / "prometheus.yml"
        config_file.write_text(json.dumps(config))  # JSON is YAML
        self.log = (directory / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited {self.process.returncode}")
            try:
                with urllib.request.urlopen(self._url("/-/ready"), timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("prometheus not ready within 30 s")

    def _url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def query(self, expression: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Evaluate ``expression`` now: labels (sorted pairs) -> value."""
        url = self._url("/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return {
            tuple(sorted(item["metric"].items())): float(item["value"][1])
            for item in body["data"]["result"]
        }

    def value(self, expression: str) -> float | None:
        """The single value of ``expression`` now (None: no series)."""
        found = self.query(expression)
        assert len(found) <= 1, found
        return next(iter(found.values()), None)

    def targets_up(self) -> dict[str, float]:
        return {dict(labels)["job"]: value for labels, value in self.query("up").items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.log.close()
