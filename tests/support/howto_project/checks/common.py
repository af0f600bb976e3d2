"""What the checks share: running workers the way a reader would, from the project's directory."""

import subprocess
import sys
import time

RUNWORKERS = [sys.executable, "manage.py", "runworkers"]


def burst(*options: str) -> str:
    """Run ``runworkers --burst`` until nothing is ready; return its output."""
    command = [*RUNWORKERS, "--burst", "--processes", "1", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def start_burst(*options: str) -> subprocess.Popen[str]:
    """Start ``runworkers --burst`` in the background, for a check that acts while a job runs."""
    command = [*RUNWORKERS, "--burst", "--processes", "1", *options]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    return output


def wait_until(condition, timeout: float = 30, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.1)
