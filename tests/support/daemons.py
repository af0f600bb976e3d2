"""Run the package's daemons as real processes and measure what they say and how they stop."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


class Daemon:
    """One ``manage.py <command>`` process, its output (stdout and stderr) in a file."""

    def __init__(self, manage_py: list[str], env: dict[str, str], log: Path, *args: str) -> None:
        self.log_path = log
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [*manage_py, *args], env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def lines(self) -> list[str]:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text().splitlines()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines())

    def stop_with(self, signum: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, float]:
        """Send ``signum``; return the exit code and the seconds it took to exit."""
        began = time.monotonic()
        self.process.send_signal(signum)
        code = self.process.wait(timeout)
        return code, time.monotonic() - began

    def kill(self) -> None:
        """Make sure the process is gone (test teardown)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


@dataclass
class Run:
    """A one-shot command's exit code, output lines and duration."""

    code: int
    lines: list[str]
    seconds: float


def run_once(manage_py: list[str], env: dict[str, str], *args: str, timeout: float = 60) -> Run:
    began = time.monotonic()
    done = subprocess.run(
        [*manage_py, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    output = (done.stdout + done.stderr).splitlines()
    return Run(done.returncode, output, time.monotonic() - began)
