"""Commands meeting a database they cannot use: one line that says why, and a non-zero exit
(issue 34, defect 10: skipqueue_status printed a 138-line traceback, runworkers took refused
credentials for an outage and retried them forever, under --burst too)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.mariadb_server import free_port

pytestmark = pytest.mark.mysql


def run(manage_py, database_url, *args, timeout=30):
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
    }
    return subprocess.run(
        [*manage_py, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def shared_server(user_and_password):
    return f"mysql://{user_and_password}@127.0.0.1:3306/helper_unused"


@pytest.mark.parametrize("command", ["skipqueue_status", "skipqueue_reap", "skipqueue_purge"])
def test_a_command_says_in_one_line_that_the_database_is_unreachable(manage_py, command):
    port = free_port()  # nothing listens there
    done = run(manage_py, f"mysql://root@127.0.0.1:{port}/x", command)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"CommandError: The database 'default' at 127.0.0.1:{port} is ")
    assert "unreachable" in lines[0] and "2002" in lines[0]


def test_status_says_the_credentials_were_refused(manage_py):
    done = run(manage_py, shared_server("root:not-the-password"), "skipqueue_status")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "refused the credentials of user 'root' at 127.0.0.1:3306" in lines[0]
    assert "1045" in lines[0] and "unreachable" not in lines[0]
    assert "not-the-password" not in done.stderr


def test_runworkers_burst_exits_on_refused_credentials_after_one_line(manage_py):
    done = run(manage_py, shared_server("root:not-the-password"), "runworkers", "--burst")
    assert done.returncode == 1
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "unreachable" not in output
    assert "not-the-password" not in output
    [logged] = [line for line in output.splitlines() if "database refused the credentials" in line]
    assert "user=root host=127.0.0.1:3306" in logged and "1045" in logged
    last = output.strip().splitlines()[-1]
    assert last.startswith("CommandError: The database 'default' refused the credentials")
