"""Run ``manage.py skipqueue_relay`` as real processes on the test database."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path


class RelayProcess:
    def __init__(self, manage_py: list[str], env: dict[str, str], log: Path, *args: str) -> None:
        self.log_path = log
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [*manage_py, "skipqueue_relay", *args],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._log.flush()

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._log.close()

    def stop(self) -> None:
        if self._log.closed:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def burst(manage_py: list[str], env: dict[str, str], url: str, timeout: float = 120) -> str:
    """Run one relay with --burst; return its output (fails the test on a non-zero exit)."""
    done = subprocess.run(
        [*manage_py, "skipqueue_relay", "--burst", "--broker", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr
