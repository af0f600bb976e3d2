"""Private RabbitMQ and NATS servers on free ports, for tests that stop or kill a broker.

The shared servers (5672, 4222) are never restarted. A private RabbitMQ node has its own node
name, ports, config file (the system one pins the listener to 5672), data and log folders, and
no plugins (the management plugin would want the shared node's port).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.brokers import reachable
from tests.support.mariadb_server import free_port


def _wait(port: int, up: bool, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while reachable(port) != up:
        if time.monotonic() > deadline:
            raise AssertionError(f"port {port} not {'up' if up else 'down'} after {timeout} s")
        time.sleep(0.2)


class PrivateNats:
    """``nats-server -js`` on a free port, its JetStream store in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> PrivateNats:
        command = ["nats-server", "-a", "127.0.0.1", "-p", str(self.port), "-js",
                   "-sd", str(self.directory)]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait(self.port, True, 20)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        _wait(self.port, False, 10)


class PrivateRabbitMQ:
    """A RabbitMQ node of its own (``rabbitmq-server -detached``), stopped with rabbitmqctl."""

    def __init__(self, config: str = "") -> None:
        """``config``: more lines of rabbitmq.conf (limits such as ``max_message_size``)."""
        # Not under pytest's tmp_path: the rabbitmq user cannot enter root's 0700 folders.
        directory = self.directory = Path(tempfile.mkdtemp(prefix="skq-rabbitmq-"))
        self.port = free_port()
        self.node = f"skqtest{secrets.token_hex(3)}@localhost"
        (directory / "enabled_plugins").write_text("[].\n")
        (directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.local = 127.0.0.1:{self.port}\n{config}"
        )
        # The server runs as the rabbitmq user when started by root.
        shutil.chown(directory, "rabbitmq")
        for path in directory.iterdir():
            shutil.chown(path, "rabbitmq")
        self.env = {
            **os.environ,
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq.conf"),
            "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(directory / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        }

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def start(self) -> PrivateRabbitMQ:
        subprocess.run(["rabbitmq-server", "-detached"], env=self.env, check=True,
                       capture_output=True)  # fmt: skip
        _wait(self.port, True, 90)
        return self

    def stop(self) -> None:
        subprocess.run(["rabbitmqctl", "-n", self.node, "-q", "stop"], env=self.env,
                       capture_output=True, timeout=60)  # fmt: skip
        _wait(self.port, False, 30)

    def remove(self) -> None:
        """Stop the node if it runs and delete its folder (test teardown)."""
        if reachable(self.port):
            self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
