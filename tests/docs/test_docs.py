"""The docs' samples run: the tutorial end to end, the how-to pages, and README's commands.

The tutorial and the testing how-to are followed by :mod:`tests.support.tutorial_runner` in a fresh
project in a temporary directory, with the test's virtualenv (django-skipqueue installed from
this checkout). The tutorial's last section moves that project to MySQL/MariaDB; it runs when
the suite itself runs on MySQL/MariaDB, against a database of its own.

The how-to pages in ``HOWTO_PAGES`` each run in a new project from tests/support/howto_project
(``new project``): its settings and ``manage.py`` alone; the page's own blocks write every
module its samples import (app, models, migrations). Each runs check scripts of that project
(its ``checks/``) that drive the page's code with real workers and assert on the outcome. They
run on SQLite, and on MySQL/MariaDB when the suite does, each in a database of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class
from django.db import connection

from tests.support import clean_machine, docpages
from tests.support.brokers import NATS_PORT, RABBITMQ_PORT, rabbitmq_vhost, reachable
from tests.support.reader_processes import free_port
from tests.support.tutorial_runner import Runner

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = docpages.DOCS / "tutorial" / "index.md"
TESTING_HOWTO = docpages.DOCS / "howto" / "testing.md"
#: The database the tutorial's last section moves to (a test uses one of its own instead).
TUTORIAL_DATABASE_URL = "mysql://root@127.0.0.1:3306/mysite"
#: Pages (under docs/) followed in a project of their own (tests/support/howto_project), with
#: their checks.
HOWTO_PAGES = [
    "howto/reserve-stock.md",
    "howto/outbox.md",
    "howto/publish-events.md",
    "howto/exactly-once.md",
    "howto/monitor-and-pause.md",
    "reference/task-options.md",
    "howto/run-workers.md",
    "reference/signals.md",
    "howto/configure.md",
    "howto/schedule-maintenance.md",
    "reference/backend.md",
    "reference/workers.md",
    "howto/replicas.md",
    "howto/migrate.md",
    "howto/schedule-tasks.md",
    "howto/batches.md",
    "howto/flow-control.md",
    "howto/prometheus.md",
]
#: What a page names but a test cannot have, and the stand-in written instead: the database
#: servers of replicas.md become the project's own database (its settings' PROJECT["database"]),
#: so that its replica aliases are other connections to the same database.
STAND_INS = {
    "howto/replicas.md": {
        f'{{"ENGINE": "django.db.backends.mysql", "HOST": "{host}", "NAME": "shop"}}': (
            'PROJECT["database"]'
        )
        for host in ("db-primary", "db-replica-1", "db-replica-2")
    },
}
#: Code blocks whose lines are commands or carry them (service files, manifests).
COMMAND_BLOCKS = {"console", "ini", "dockerfile", "yaml", "text", "bash", "sh"}
SHELL_FORM = re.compile(r"python manage\.py (\w+)(.*)$")
SHELL_OPERATOR = re.compile(r"^(\d?[<>]|[|&;])")
EXEC_FORM = re.compile(r'\["python", "manage\.py", ((?:"[^"]*",?\s*)+)\]')
PAGE_COMMAND = re.compile(r"^# \w+/management/commands/(\w+)\.py\n")
README_COMMAND = re.compile(r"^\$ (bash scripts/\S+)$", re.MULTILINE)
#: The tutorial and the demo run in temporary projects on SQLite (and MySQL when the suite runs
#: there), so the PostgreSQL pass would only repeat the SQLite pass: it skips them.
not_on_postgres = pytest.mark.skipif(
    connection.vendor == "postgresql", reason="covered by the SQLite and MariaDB passes"
)


def _mysql_database(purpose: str = "tutorial") -> tuple[dict[str, str], str] | None:
    """Settings of the suite's MySQL server and a database name for a temporary project."""
    if connection.vendor != "mysql":
        return None
    settings = connection.settings_dict
    name = re.sub(r"^test_", "", settings["NAME"])[:40] + "_" + purpose
    return settings, name


def _mysql_url(settings: dict[str, str], name: str) -> str:
    """The suite's MySQL server as a DATABASE_URL naming database ``name``."""
    user, password = settings["USER"] or "root", settings["PASSWORD"] or ""
    credentials = f"{user}:{password}" if password else user
    address = f"{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 3306}"
    return f"mysql://{credentials}@{address}/{name}"


def _mysql(settings: dict[str, str], statement: str) -> None:
    import MySQLdb

    link = MySQLdb.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=int(settings["PORT"] or 3306),
        user=settings["USER"] or "root",
        password=settings["PASSWORD"] or "",
    )
    try:
        link.cursor().execute(statement)
    finally:
        link.close()


@contextmanager
def _cleaned_up(runner: Runner, mysql: tuple[dict[str, str], str] | None) -> Iterator[None]:
    """Stop what the page started and drop its database; on failure, show the page's last steps."""
    try:
        yield
    except BaseException:
        print("\n".join(runner.log[-40:]))
        raise
    finally:
        runner.kill_all()
        if mysql:
            _mysql(mysql[0], f"DROP DATABASE IF EXISTS {mysql[1]}")


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """The tutorial followed from its first command to its last, once per module."""
    mysql = _mysql_database()
    runner = Runner(tmp_path_factory.mktemp("tutorial"))
    if mysql:
        settings, name = mysql
        runner.replacements = {TUTORIAL_DATABASE_URL: _mysql_url(settings, name)}
        runner.replacements["CREATE DATABASE mysite"] = f"CREATE DATABASE {name}"
        _mysql(settings, f"DROP DATABASE IF EXISTS {name}")
    with _cleaned_up(runner, mysql):
        runner.follow(TUTORIAL, mysql=mysql is not None)
        yield runner


@pytest.mark.slow
@not_on_postgres
def test_tutorial(tutorial: Runner):
    if connection.vendor == "mysql":
        assert tutorial.stopped_at is None, "the MySQL section did not run"
    else:
        assert tutorial.stopped_at is not None
    assert list((tutorial.cwd / "sent_emails").iterdir()), "no receipt was written"


@pytest.mark.slow
@not_on_postgres
def test_testing_howto(tutorial: Runner):
    """The testing how-to's files go into the tutorial's project, and its pytest run passes."""
    tutorial.follow(TESTING_HOWTO, mysql=False)
    assert (tutorial.cwd / "tests" / "test_workers.py").exists()


@pytest.mark.slow
# A page's blocks read the same on every database (a block for one database says so, and
# those are the tutorial's and the testing how-to's, which still run on SQLite): MariaDB runs
# each page once, in a new project, with real workers.
@pytest.mark.vendor_neutral
@pytest.mark.parametrize("page", HOWTO_PAGES)
def test_howto_page(page: str, tmp_path: Path):
    """Follow a how-to page in a project of its own, with real workers; its checks must pass."""
    runner = Runner(tmp_path, replacements=dict(STAND_INS.get(page, {})))
    mysql = _mysql_database(re.sub(r"\W", "_", Path(page).stem))
    if mysql:
        settings, name = mysql
        runner.database = {
            "ENGINE": "django.db.backends.mysql",
            "NAME": name,
            **{key: settings[key] for key in ("HOST", "PORT", "USER", "PASSWORD")},
        }
        _mysql(settings, f"DROP DATABASE IF EXISTS {name}")
        _mysql(settings, f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
    with _cleaned_up(runner, mysql), _broker_for(page, runner), _prometheus_for(page, runner):
        runner.follow(docpages.DOCS / page, mysql=mysql is not None)
    assert runner.stopped_at is None
    assert runner.checks, f"{page} has no 'run checks/...' directive: nothing was asserted"


@contextmanager
def _broker_for(page: str, runner: Runner) -> Iterator[None]:
    """The outbox how-to publishes to RabbitMQ, to a vhost of the test's own, then to the shared
    NATS server, into a stream and under a subject prefix of the test's own (the page's stream
    script and settings get them in place of ``ORDERS`` and ``orders``), deleted afterwards."""
    if page != "howto/publish-events.md":
        yield
        return
    if not reachable(RABBITMQ_PORT) or not reachable(NATS_PORT):
        pytest.skip("RabbitMQ or NATS is not running")
    token = secrets.token_hex(4)
    stream, prefix = f"SKQ_HOWTO_{token}", f"skq-howto-{token}"
    nats_url = 'SKIPQUEUE_OUTBOX_BROKER_URL = "nats://127.0.0.1:4222"'
    topics = {"order.placed": prefix, "order.cancelled": prefix}
    runner.replacements.update(
        {
            nats_url: f"{nats_url}\nSKIPQUEUE_OUTBOX_TOPICS = {topics!r}",
            '"ORDERS"': f'"{stream}"',
            '"orders.>"': f'"{prefix}.>"',
        }
    )
    runner.extra_env.update(SKQ_HOWTO_NATS_STREAM=stream, SKQ_HOWTO_NATS_PREFIX=prefix)
    try:
        with rabbitmq_vhost() as url:
            runner.replacements["127.0.0.1:5672/%2F"] = url.split("@", 1)[1]
            yield
    finally:
        runner.kill_all()
        _delete_stream(stream)


@contextmanager
def _prometheus_for(page: str, runner: Runner) -> Iterator[None]:
    """The Prometheus how-to's hosts become this machine: the workers' metrics port a free one,
    the web app the page's runserver, over HTTP, with a token of the test's own (the
    environment the page's settings read it from) in a file of the project."""
    if page != "howto/prometheus.md":
        yield
        return
    metrics_port = free_port()
    runner.extra_env["SKIPQUEUE_METRICS_TOKEN"] = secrets.token_hex(16)
    runner.replacements.update(
        {
            '["worker-1:9464", "worker-2:9464"]': f'["127.0.0.1:{metrics_port}"]',
            "9464": str(metrics_port),
            "scheme: https": "scheme: http",
            '["www.example.com"]': f'["127.0.0.1:{runner.port}"]',
            "/etc/prometheus/skipqueue-token": str(runner.root / "project" / "skipqueue-token"),
        }
    )
    yield


def _delete_stream(name: str) -> None:
    """Delete the test's own stream if the page made it (never another one)."""
    import nats
    from nats.js.errors import NotFoundError

    async def delete() -> None:
        connection = await nats.connect(f"nats://127.0.0.1:{NATS_PORT}")
        try:
            await connection.jetstream().delete_stream(name)
        except NotFoundError:
            pass
        finally:
            await connection.close()

    asyncio.run(delete())


def _manage_py_lines() -> list[tuple[str, str, list[str], str]]:
    """Every ``manage.py <command> ...`` of the docs' and README's command blocks.

    Shell lines (console sessions, a systemd unit's ``ExecStart``, a crontab line) up to the
    first redirection or operator, and the exec form of Dockerfiles and Kubernetes manifests
    (``["python", "manage.py", "runworkers", "--processes", "2", ...]``, over several lines).
    """
    found = []
    for path in [*docpages.DOCS.rglob("*.md"), ROOT / "README.md"]:
        for block in docpages.code_blocks(path):
            if block.language not in COMMAND_BLOCKS:
                continue
            for match in EXEC_FORM.finditer(block.text):
                words = re.findall(r'"([^"]*)"', match.group(1))
                found.append((block.where, words[0], words[1:], match.group(0)))
            for line in block.text.splitlines():
                match = SHELL_FORM.search(line)
                if match and "[-" not in line:  # a synopsis ("[--json]") is not a command
                    words = shlex.split(match.group(2))
                    words = list(
                        itertools.takewhile(lambda word: not SHELL_OPERATOR.match(word), words)
                    )
                    found.append((block.where, match.group(1), words, line.strip()))
    return found


def _commands_written_by_pages() -> set[str]:
    """The commands a page writes itself (``# <app>/management/commands/<name>.py``): its own
    test runs them in the page's project, where they exist."""
    written = set()
    for path in docpages.DOCS.rglob("*.md"):
        for block in docpages.code_blocks(path):
            match = PAGE_COMMAND.match(block.text)
            if block.language == "python" and match:
                written.add(match.group(1))
    return written


@pytest.mark.parametrize(
    ("where", "name", "arguments", "line"),
    [line for line in _manage_py_lines() if line[1] not in _commands_written_by_pages()],
)
def test_documented_command_lines_parse(where: str, name: str, arguments: list[str], line: str):
    """Every manage.py command line in the docs is accepted by that command's real parser."""
    commands = get_commands()
    assert name in commands, f"{where}: no command {name!r}"
    command = load_command_class(commands[name], name)
    parser = command.create_parser("manage.py", name)
    parser.parse_args(arguments)


def test_command_lines_are_found_in_every_form():
    """The scan above sees the unit file, the Dockerfile, the manifest and the crontab line."""
    lines = [line for _, _, _, line in _manage_py_lines()]
    assert any(line.startswith("ExecStart=") for line in lines)
    assert any(line.startswith('["python", "manage.py", "runworkers"') for line in lines)
    assert any("skipqueue_health" in line and line.startswith("[") for line in lines)
    assert any(line.startswith("0,30 3 * * *") for line in lines)


def test_readme_test_command_is_what_ci_runs():
    """README's second command is the one .ci/run executes (running it here would recurse)."""
    commands = README_COMMAND.findall((ROOT / "README.md").read_text())
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    ci = (ROOT / ".ci" / "run").read_text()
    executed = [line.strip() for line in ci.splitlines() if not line.startswith("#")]
    assert f"exec {commands[1]}" in executed


#: All the demo may use besides what it installs: no database server, no mysqladmin, no apt-get.
DEMO_TOOLS = ["bash", "dirname", "sha1sum", "cut"]


@pytest.mark.slow
@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="the demo uses a SQLite file of its own: run in the SQLite pass only",
)
def test_readme_demo_command_runs_on_a_machine_without_database_servers(tmp_path: Path):
    """README's first command, from a copy of the checkout, with no DATABASE_URL and a PATH of
    a few tools: no MariaDB binary, no client, no package manager (tests/support/clean_machine).
    The copy's virtualenv is set up already, as setup.sh leaves it (an install is tested by
    tests/docs/test_install.py)."""
    command = README_COMMAND.findall((ROOT / "README.md").read_text())[0]
    checkout = clean_machine.copy_checkout(ROOT, tmp_path / "checkout")
    clean_machine.reuse_virtualenv(checkout, "postgres")  # demo.sh's extras
    env = clean_machine.bare_environment(tmp_path, DEMO_TOOLS, DEMO_JOBS="60")
    assert clean_machine.found_on(env["PATH"], "mariadbd", "mysqladmin", "apt-get") == []
    done = subprocess.run(
        shlex.split(command), cwd=checkout, env=env, capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "[setup]" not in done.stderr, "nothing to install or start"
    assert "Enqueued 60 demo jobs" in output
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout, re.MULTILINE))
    assert counts["succeeded"] == "60", output[-4000:]
    assert re.search(r"ledger: (\d+) executions of \1 record jobs \(0 repeated\)", output)


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 100, "README.md should fit on a screen or two"
    targets = re.findall(r"\]\(((?!https?://)[^)#]+)\)", text)
    assert targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing


def test_docs_build_without_warnings_or_remote_assets(tmp_path: Path):
    """The HTML build is warning-free and loads nothing from the network (diagrams included)."""
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", "docs", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    remote = re.compile(r"<(?:script|img|link)\b[^>]*(?:src|href)=\"(?:https?:)?//", re.I)
    for page in tmp_path.rglob("*.html"):
        assert not remote.search(page.read_text()), page.relative_to(tmp_path)
    assert (tmp_path / "_images" / "job-states.svg").exists()
