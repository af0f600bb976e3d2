"""Fixtures of the multi-host suite: the network rig, a server on its bridge, hosts' workers.

One rig and one private ``mariadbd`` per session (the server listens on the bridge's address
only, so the hosts reach it through the rig's network and nothing else does); each test
starts real ``runworkers`` processes inside the hosts' namespaces and leaves every link
healed and unshaped for the next.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import MySQLdb
import pytest
from django.db import connection

from tests.reliability.conftest import PrivateDatabase
from tests.reliability.procs import ROOT, Supervisor, child_env, manage_module, wait_for
from tests.reliability.server import PrivateMariaDB
from tests.support import netrig

DATABASE = "multihost"


class RigServer(PrivateMariaDB):
    """A private server on the rig's bridge address, which lets root in from the subnet."""

    def __init__(self, base: Path, host: str) -> None:
        super().__init__(base, host=host)
        self.subnet = host.rpartition(".")[0]

    def _wait_until_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                local = MySQLdb.connect(unix_socket=str(self.base / "sock"), user="root")
                break
            except MySQLdb.OperationalError:
                exited = self.process is not None and self.process.poll() is not None
                if exited or time.monotonic() > deadline:
                    raise RuntimeError(f"mariadbd did not start:\n{self.error_log()}") from None
                time.sleep(0.1)
        try:
            cursor = local.cursor()
            cursor.execute(f"CREATE USER IF NOT EXISTS 'root'@'{self.subnet}.%'")
            cursor.execute(f"GRANT ALL ON *.* TO 'root'@'{self.subnet}.%' WITH GRANT OPTION")
        finally:
            local.close()
        super()._wait_until_up(timeout)


@pytest.fixture(scope="session")
def rig() -> Iterator[netrig.NetRig]:
    if connection.vendor != "mysql":
        pytest.skip("the multi-host rig runs on MariaDB/MySQL only")
    reason = netrig.unavailable()
    if reason:
        pytest.skip(f"no multi-host rig: {reason}")
    network = netrig.NetRig(hosts=3)
    try:
        yield network
    finally:
        network.close()
        assert network.leftovers() == [], "the rig left namespaces or links behind"


@pytest.fixture(scope="session")
def rig_server(rig: netrig.NetRig, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = RigServer(tmp_path_factory.mktemp("rig-mariadb"), rig.server_address).start()
    try:
        server.create_database(DATABASE, child_env(server.url(DATABASE)))
        yield server
    finally:
        server.destroy()


class Hosts:
    """The rig's hosts, their runworkers and the server's database, for one test."""

    def __init__(self, network: netrig.NetRig, server: Any, logs: Path) -> None:
        self.rig, self.server, self.logs = network, server, logs
        self.db = PrivateDatabase(server, DATABASE)
        self.started: dict[int, Supervisor] = {}

    def env(self, *, port: int | None = None, **settings: Any) -> dict[str, str]:
        """A child's environment (``port``: reach the server through a relay there)."""
        return child_env(self.server.url(DATABASE, port), **settings)

    def start(
        self, host: netrig.Host, env: dict[str, str], *args: str, wrapper: tuple[str, ...] = ()
    ) -> Supervisor:
        """``runworkers`` on ``host``, under ``wrapper`` (``faketime``) if given.

        ``ip netns exec`` execs its command: without a wrapper the pid is the supervisor's;
        a wrapper such as ``faketime`` forks it (``Supervisor.pid`` finds the child).
        """
        log = self.logs / f"host{host.index}.log"
        supervisor = Supervisor(env, log, *args, prefix=(*host.prefix(), *wrapper))
        supervisor.wrapped = bool(wrapper)
        self.started[host.index] = supervisor
        return supervisor

    def enqueue(
        self,
        env: dict[str, str],
        task: str,
        count: int,
        *,
        host: netrig.Host | None = None,
        every: float | None = None,
        **kwargs: Any,
    ) -> list[int]:
        """Enqueue ``count`` jobs from a child process (on ``host``, ``every`` s one by one)."""
        args = [task, str(count), json.dumps(kwargs), *([] if every is None else [str(every)])]
        if host is None:
            out = manage_module(env, "tests.reliability.multihost.enqueue", *args)
        else:
            done = subprocess.run(
                [
                    *host.prefix(),
                    sys.executable,
                    "-m",
                    "tests.reliability.multihost.enqueue",
                    *args,
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                cwd=ROOT,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            out = done.stdout
        return json.loads(out.strip().splitlines()[-1])

    def workers_of(self, supervisor: Supervisor, timeout: float = 180) -> list[str]:
        """Owner ids of the worker processes a host's supervisor runs (once they registered)."""

        def found() -> list[str]:
            rows = self.db.query(
                "SELECT w.owner FROM skipqueue_worker w JOIN skipqueue_worker s "
                "ON w.supervisor = s.owner WHERE s.pid = %s AND s.stopped_at IS NULL "
                "AND w.stopped_at IS NULL",
                [supervisor.pid],
            )
            return [owner for (owner,) in rows]

        return wait_for(found, timeout, interval=0.2)


@pytest.fixture
def hosts(rig: netrig.NetRig, rig_server: Any, tmp_path: Path) -> Iterator[Hosts]:
    if rig_server.process is None:
        rig_server.start()
    rig_server.truncate(DATABASE)
    state = Hosts(rig, rig_server, tmp_path)
    try:
        yield state
    finally:
        for supervisor in state.started.values():
            supervisor.stop()
        for host in rig.hosts:
            if host.index in rig.partitioned:
                rig.heal(host)
            rig.unshape(host)
            rig.keep_all(host)


def first_line_after(supervisor: Supervisor, pattern: str, offset: int) -> bool:
    """Whether the host's log has a line matching ``pattern`` past byte ``offset``."""
    return re.search(pattern, supervisor.log()[offset:], re.M) is not None
