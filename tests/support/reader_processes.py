"""The processes a docs-page reader starts: commands run to completion, servers in the background.

A mixin of ``tests.support.tutorial_runner.Runner``: it runs in the reader's current directory and
environment and appends what it ran, with the output, to the reader's log.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.docpages import Block

COMMAND_TIMEOUT = 240


def interruptible() -> None:
    """Let Ctrl-C (SIGINT) stop the process, as in a reader's terminal.

    A test suite started as a background job of a shell without job control inherits SIGINT
    ignored, and so would the servers it starts: runserver would then never stop.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ReaderProcesses:
    """Run a reader's commands; keep track of the ones left running in the background."""

    cwd: Path
    log: list[str]
    background: dict[str, subprocess.Popen[str]]

    @property
    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def run(self, command: str, block: Block | None) -> str:
        where = block.where if block else "directive"
        process = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        output = process.stdout + process.stderr
        self.log.append(f"$ {command[:200]}\n{output[-3000:]}")
        assert process.returncode == 0, f"{where}: exit {process.returncode}\n{output[-3000:]}"
        return output

    def start(self, name: str, command: str) -> None:
        assert name not in self.background, f"{name} is already running"
        self.log.append(f"$ {command} &")
        self.background[name] = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=interruptible,
        )

    def stop(self, name: str, signum: int, *, timeout: float = 60) -> None:
        """Stop a background process as Ctrl-C would, and check it exits 0 in time."""
        process = self.background.pop(name)
        process.send_signal(signum)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            message = f"{name} did not stop within {timeout}s:\n{output[-3000:]}"
            raise AssertionError(message) from None
        self.log.append(f"{name} exited {process.returncode}:\n{output[-3000:]}")
        assert process.returncode == 0, f"{name} exited {process.returncode}\n{output[-3000:]}"

    def stop_all(self) -> None:
        for name in list(self.background):
            self.stop(name, signal.SIGINT)

    def kill_all(self) -> None:
        """Last resort at teardown: nothing this runner started may outlive the test."""
        for process in self.background.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
        self.background.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited: {process.communicate()[0][-3000:]}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout}s")


def login(port: int, username: str, password: str) -> urllib.request.OpenerDirector:
    """Log in to the admin like a browser: fetch the form, post it with its CSRF token."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    url = f"http://127.0.0.1:{port}/admin/login/?next=/admin/"
    with opener.open(url, timeout=30) as response:
        form = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, "no CSRF token in the admin login form"
    data = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    request = urllib.request.Request(url, data=data, headers={"Referer": url})
    with opener.open(request, timeout=30) as response:
        assert response.geturl().endswith("/admin/"), "the admin login failed"
    return opener
