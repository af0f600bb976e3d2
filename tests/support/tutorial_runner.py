"""Follow a docs page the way a reader does: run its commands, write its files, run its sessions.

Conventions of the pages it runs (the tutorial states them in a comment at its top):

- ``console`` blocks: lines starting with ``$ `` are commands, run with bash in the reader's
  current directory; the lines after a command are its expected output (doctest rules, ``...``
  matches anything), compared when present. Long-running commands (``runserver``, ``runworkers``
  without ``--burst``) are started in the background. Environment setup that the test's own
  virtualenv already provides (``python -m venv``, ``source``, ``pip install``) is checked,
  not run, unless the reader starts from a bare machine (``Runner.installs``): then the
  virtualenv is made and activated, and the ``pip install`` lines named there are run.
- ``python`` (and ``ini``) blocks whose first line is ``# <path>``, or that follow a
  ``next block as <path>`` directive (a fragment shown without its file), write that file;
  ``# <path>: add at the end`` appends to it; a trailing ``(SQLite only)`` limits the block to a
  project on SQLite. Any other python block is an error: every sample must be accounted for.
- A ``yaml`` block (a Prometheus configuration) is written only after ``next block as <path>``.
- ``pycon`` blocks are run by doctest inside ``python manage.py shell``.
- ``text`` blocks are illustrations (a log excerpt, the statements a worker sends): not run,
  nor are MyST directives such as ``{note}``.
- ``<!-- tutorial-test: ... -->`` comments are instructions: see ``Runner.directive``. A block
  that cannot run (a fragment of a larger program, a production service file) follows
  ``skip next block: <reason>``; ``next block as <path>: add at the end`` appends a fragment
  (a few settings) to a file of the project. A how-to
  page starts with ``new project`` (the settings and ``manage.py`` of a project configured as
  docs/howto/install.md leaves it, on the test's database, unmigrated, and no app: the page's
  own blocks write every module it imports and run ``makemigrations`` and ``migrate``), and has
  ``run checks/<name>.py`` lines, scripts of that project that exercise the page's code with
  real workers and assert on the outcome (the tasks they enqueue to watch the workers are
  theirs, in checks/chores.py).
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import projects
from tests.support.django_versions import as_on_this_django
from tests.support.docpages import Block, Directive, items
from tests.support.reader_admin import ReaderAdmin
from tests.support.reader_processes import ReaderProcesses, free_port, wait_for_port

#: The first line of a list of apps whose entries start with "# ..." (the reader's own apps).
KEEP_APPS = re.compile(r"^(INSTALLED_APPS = \[\n)(\s+)# \.\.\.$", re.MULTILINE)
FILE_MARKER = re.compile(r"^# (\S+?)(: add at the end)?( \(SQLite only\))?$")
#: pip distribution name -> the module that proves it is installed.
MODULES = {"django-skipqueue": "django_skipqueue", "pytest-django": "pytest_django"}
#: The project name of a requirement: ``name @ url``, a directory, or a plain name.
REQUIREMENT_NAME = re.compile(
    r"^(?:[^@]*/)?([A-Za-z0-9][\w.-]*?)(?:\[[\w,]+\])?(?:\s*@.*|\.git)?/?$"
)
WAIT_FOR_JOBS = """
import time
from django_skipqueue.models import Job
deadline = time.monotonic() + 60
while Job.objects.exclude(status__in=["succeeded", "failed", "cancelled"]).exists():
    assert time.monotonic() < deadline, list(Job.objects.values_list("id", "status"))
    time.sleep(0.2)
assert not Job.objects.exclude(status="succeeded").exists(), "a job did not succeed"
"""
#: Until the workers and the reaper have started, as a readiness probe would wait.
WAIT_FOR_HEALTH = (
    "timeout 60 bash -c 'until python manage.py skipqueue_health; do sleep 0.5; done'"
)
RUN_DOCTEST = """
import doctest, sys
path = {path!r}
test = doctest.DocTestParser().get_doctest(open(path).read(), {{}}, {name!r}, path, 0)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
runner.run(test)
sys.exit(1 if runner.failures else 0)
"""


@dataclass
class Runner(ReaderProcesses, ReaderAdmin):
    """The state of one reader going through pages: directory, processes, project database."""

    root: Path
    #: Textual replacements applied to every command and file once set (e.g. a database name).
    replacements: dict[str, str] = field(default_factory=dict)
    cwd: Path = field(init=False)
    port: int = field(init=False)
    vendor: str = "sqlite"
    background: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    credentials: tuple[str, str] | None = None
    #: The database of a how-to page's project (``new project``); None means SQLite.
    database: dict[str, Any] | None = None
    #: Environment variables of the test's own for the page's commands and checks (the names
    #: of a broker's stream made for this test, say).
    extra_env: dict[str, str] = field(default_factory=dict)
    #: The check scripts run so far (``run``): a page without one proves nothing.
    checks: list[str] = field(default_factory=list)
    #: Where the next python block goes when it has no ``# <path>`` line (``next block as``).
    next_path: str | None = None
    #: Whether ``next_path`` is appended to (``next block as <path>: add at the end``).
    next_append: bool = False
    #: Why the next block is not run (``skip next block: <reason>``).
    skip_reason: str | None = None
    #: A reader on a bare machine: the ``pip install`` arguments of the page to run, each with
    #: what to install instead (a checkout's path, a ``git+file://`` URL). None: the test's
    #: own virtualenv stands for the page's, and install lines are only checked.
    installs: dict[str, str] | None = None
    #: The ``bin`` directory of the virtualenv the page made and activated, if any.
    venv_bin: Path | None = None
    log: list[str] = field(default_factory=list)
    stopped_at: str | None = None

    def __post_init__(self) -> None:
        self.cwd = self.root
        self.port = free_port()

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE"))}
        env.pop("VIRTUAL_ENV", None)
        if self.venv_bin:
            env["VIRTUAL_ENV"] = str(self.venv_bin.parent)
        bin_dir = self.venv_bin or Path(sys.executable).parent
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONPATH", None)
        return {**env, **self.extra_env}

    def follow(self, page: Path, *, mysql: bool) -> None:
        """Run every block and directive of ``page`` in order."""
        for item in items(page):
            if isinstance(item, Directive):
                if not self.directive(item, page, mysql=mysql):
                    self.stopped_at = f"{page.name}:{item.line}"
                    return
            else:
                self.block(item)

    def block(self, block: Block) -> None:
        self.log.append(f"--- {block.where} ({block.language})")
        if self.skip_reason:
            self.log.append(f"not run: {self.skip_reason}")
            self.skip_reason = None
            return
        if block.language == "console":
            self.console(block)
        elif block.language == "pycon":
            self.pycon(block)
        elif block.language in ("python", "ini") or (self.next_path and block.language == "yaml"):
            self.file(block)
        elif block.language != "text" and not block.language.startswith("{"):
            raise AssertionError(f"{block.where}: no rule to run a {block.language!r} block")

    # Blocks

    def console(self, block: Block) -> None:
        for command, expected in split_console(block.text):
            self.command(self.replace(command), expected, block)

    def command(self, command: str, expected: str, block: Block) -> None:
        words = shlex.split(command)
        if command in ("python -m venv .venv", "source .venv/bin/activate") or words[:2] == [
            "pip",
            "install",
        ]:
            self.environment(command, words, block)
            return
        if words[0] == "cd":
            self.cwd = self.cwd / words[1]
            return
        if words[1:] == ["manage.py", "shell"]:
            return  # the pycon block that follows runs in a shell
        if "runserver" in words:
            self.start("runserver", f"{command} --noreload 127.0.0.1:{self.port}")
            wait_for_port(self.port, self.background["runserver"])
            return
        if "runworkers" in words and "--burst" not in words:
            self.start("runworkers", command)
            return
        if "skipqueue_relay" in words and "--burst" not in words:
            self.start("skipqueue_relay", command)
            return
        self.remember_credentials(command)
        output = self.run(command, block)
        if expected:
            check_output(expected, output, f"{block.where}: {command}")

    def environment(self, command: str, words: list[str], block: Block) -> None:
        """Make, activate and fill the page's virtualenv, or check the test's own stands for it."""
        if self.installs is None:
            if words[0] == "pip":
                for requirement in (word for word in words[2:] if not word.startswith("-")):
                    name = requirement_name(requirement)
                    module = MODULES.get(name, name)
                    assert importlib.util.find_spec(module), f"{block.where}: {name} not installed"
            return
        if words[0] == "source":
            self.venv_bin = self.cwd / ".venv" / "bin"
            assert (self.venv_bin / "python").exists(), f"{block.where}: no virtualenv to activate"
        elif words[0] == "python":
            self.run(command, block)
        elif words[-1] in self.installs:
            assert self.venv_bin, f"{block.where}: pip install outside a virtualenv"
            self.run(shlex.join([*words[:-1], self.installs[words[-1]]]), block)
        else:
            self.log.append(f"not run (another way to install): {command}")

    def pycon(self, block: Block) -> None:
        script = self.root / f"session_{block.line}.txt"
        script.write_text(self.replace(block.text))
        code = RUN_DOCTEST.format(path=str(script), name=block.where)
        self.run(shlex.join(["python", "manage.py", "shell", "-c", code]), block)

    def file(self, block: Block) -> None:
        if self.next_path:
            path, self.next_path = self.next_path, None
            self.write(path, block.text, append=self.next_append)
            return
        first = block.text.splitlines()[0]
        match = FILE_MARKER.match(first)
        assert match, f"{block.where}: a python block must start with '# <path>', not {first!r}"
        path, append, sqlite_only = match.groups()
        if sqlite_only and self.vendor != "sqlite":
            return
        self.write(path, block.text, append=bool(append))

    def write(self, path: str, text: str, *, append: bool) -> None:
        target = self.cwd / path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = self.replace(text)
        if append:
            text = target.read_text() + "\n\n" + text
        target.write_text(text)

    # Directives

    def directive(self, directive: Directive, page: Path, *, mysql: bool) -> bool:
        """Carry out one instruction; return False to stop following the page."""
        self.log.append(f"--- {page.name}:{directive.line} directive {directive.text}")
        if directive.text == "wait for jobs":
            self.run(shlex.join(["python", "manage.py", "shell", "-c", WAIT_FOR_JOBS]), None)
        elif directive.text == "start runworkers":
            self.start("runworkers", "python manage.py runworkers --processes 1 --threads 1")
            self.run(WAIT_FOR_HEALTH, None)
        elif directive.text.startswith("next block as "):
            path = directive.text.removeprefix("next block as ")
            self.next_path = path.removesuffix(": add at the end")
            self.next_append = path != self.next_path
        elif directive.text.startswith("skip next block: "):
            self.skip_reason = directive.text.removeprefix("skip next block: ").strip()
            assert self.skip_reason, (
                f"{page.name}:{directive.line}: a skipped block needs a reason"
            )
        elif directive.text == "wait for runworkers":
            self.run(WAIT_FOR_HEALTH, None)
        elif directive.text.startswith("stop "):
            self.stop(directive.text.removeprefix("stop "), signal.SIGINT)
        elif directive.text == "admin pages":
            self.visit_admin(page)
        elif directive.text.startswith("admin action "):
            action, _, path = directive.text.removeprefix("admin action ").partition(" on ")
            self.run_admin_action(action, path)
        elif directive.text.startswith("admin page "):
            path, _, text = directive.text.removeprefix("admin page ").partition(" shows ")
            assert text in self.admin_page(path), f"{page.name}:{directive.line}: no {text!r}"
        elif directive.text == "new project":
            self.new_project()
        elif directive.text.startswith("run "):
            self.run_check(directive.text.removeprefix("run "))
        elif directive.text == "mysql only from here":
            self.stop_all()
            if not mysql:
                return False
            self.vendor = "mysql"
        else:
            raise AssertionError(f"{page.name}:{directive.line}: unknown directive")
        return True

    def new_project(self) -> None:
        """Start from tests/support/howto_project's settings and ``manage.py``, unmigrated."""
        self.cwd = projects.create(self.root / "project", self.database)
        self.vendor = "sqlite" if self.database is None else "mysql"

    def run_check(self, script: str) -> None:
        """Run one of the project's check scripts in ``manage.py shell``: it asserts outcomes."""
        code = f"import runpy; runpy.run_path({script!r}, run_name='__main__')"
        self.run(shlex.join(["python", "manage.py", "shell", "-c", code]), None)
        self.checks.append(script)

    # Helpers

    def replace(self, text: str) -> str:
        text = as_on_this_django(text)
        # "# ..." in a list of apps stands for the reader's own apps: keep the project's.
        text, kept = KEEP_APPS.subn(r"\1\2*INSTALLED_APPS,  # ...", text)
        if kept:
            text += "\nINSTALLED_APPS = list(dict.fromkeys(INSTALLED_APPS))\n"
        text = text.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        for old, new in self.replacements.items():
            text = text.replace(old, new)
        return text


def requirement_name(requirement: str) -> str:
    """The project a ``pip install`` argument names (``name @ url``, a directory, a name)."""
    match = REQUIREMENT_NAME.match(requirement)
    assert match, f"cannot tell what {requirement!r} installs"
    return match.group(1)


def split_console(text: str) -> list[tuple[str, str]]:
    """Return (command, expected output) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            assert pairs, f"output before any command: {line!r}"
            pairs[-1][1].append(line)
    return [(command, "\n".join(lines).strip()) for command, lines in pairs]


def check_output(expected: str, output: str, where: str) -> None:
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(expected + "\n", output, flags), (
        f"{where}: output does not match\n--- expected\n{expected}\n--- got\n{output[-3000:]}"
    )
