"""The first hour of a new user: installing as the docs say, then the tutorial, from nothing.

django-skipqueue is not on PyPI: README and the tutorial install it from a Git URL or from a
checkout. Both paths run here as written, in a virtualenv the tutorial itself creates in a
temporary directory outside the checkout: ``pip install`` of the checkout, and of a
``git+file://`` URL of a clone (standing for the Git URL). The Git install then follows the
whole tutorial, on SQLite and then on the suite's MariaDB; the checkout install its SQLite part
(the rest would repeat the Git run: about a minute of CI). pip builds mysqlclient in both, as
on a user's machine (scripts/setup.sh installs the compiler and headers the tutorial lists).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.docs.test_docs import (
    TUTORIAL,
    TUTORIAL_DATABASE_URL,
    _cleaned_up,
    _mysql,
    _mysql_database,
    _mysql_url,
)
from tests.support import docpages
from tests.support.tutorial_runner import Runner, split_console

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The install commands as the pages write them; the test installs from real places instead.
GIT_INSTALL = '"django-skipqueue @ git+https://git.example.com/django-skipqueue.git"'
CHECKOUT_INSTALL = "/path/to/django-skipqueue"
#: What to install first, per system, for pip to build mysqlclient.
BUILD_PACKAGES = [
    "apt-get install gcc pkg-config python3-dev default-libmysqlclient-dev",
    "libmariadb-dev",
    "dnf install gcc pkgconf-pkg-config python3-devel mariadb-connector-c-devel",
    "brew install pkg-config mysql-client",
    "PKG_CONFIG_PATH",
]


def _commands(path: Path) -> list[str]:
    """Every ``$ `` command of the page's console blocks, in order."""
    return [
        command
        for block in docpages.code_blocks(path)
        if block.language == "console"
        for command, _ in split_console(block.text)
    ]


def test_readme_and_tutorial_install_from_git_or_a_checkout_not_from_pypi():
    for page in (README, TUTORIAL):
        installs = [c for c in _commands(page) if c.startswith("pip install")]
        assert f"pip install {GIT_INSTALL}" in installs, page.name
        assert "pip install django-skipqueue" not in installs, f"{page.name}: not on PyPI"
        assert CHECKOUT_INSTALL in page.read_text(), page.name
    assert f"pip install {CHECKOUT_INSTALL}" in _commands(TUTORIAL)


def test_the_tutorial_says_what_to_install_to_build_mysqlclient_per_system():
    text = TUTORIAL.read_text()
    missing = [packages for packages in BUILD_PACKAGES if packages not in text]
    assert not missing
    assert "nothing but Python" not in text


def test_the_tutorial_shows_what_a_new_user_meets():
    text = TUTORIAL.read_text()
    mysql_part = text.split("<!-- tutorial-test: mysql only from here -->")[1]
    # The superuser lives in the SQLite file: the MySQL database needs its own.
    assert "createsuperuser" in mysql_part and "tutorial-test: admin pages" in mysql_part
    # Django's own log lines, next to the queue's.
    assert re.search(r"^Task id=1 path=shop\.tasks\.send_receipt state=RUNNING$", text, re.M)
    # A job fails, and the admin's failed-job list shows it.
    assert re.search(r"attempt=2 status=failed .*error=shop\.models\.Order\.DoesNotExist", text)
    assert "admin page /admin/django_skipqueue/job/?status__exact=failed shows" in text
    # ... and retries it there; the next worker runs the added attempt.
    assert "admin action retry_failed on /admin/django_skipqueue/job/?status__exact=failed" in text
    assert re.search(r"job=3 .* attempt=3 status=failed", text)
    # django-environ's DATABASE_URL, with the reason it is installed.
    assert f'env.db("DATABASE_URL", default="{TUTORIAL_DATABASE_URL}")' in mysql_part


def _clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    return clone


@pytest.mark.slow
@pytest.mark.mysql
@pytest.mark.parametrize("source", ["checkout", "git"])
def test_a_new_user_installs_as_written_and_follows_the_tutorial(source: str, tmp_path: Path):
    """A fresh virtualenv outside the checkout, made by the tutorial's own commands."""
    if source == "git":
        installs = {GIT_INSTALL.strip('"'): f"django-skipqueue @ git+file://{_clone(tmp_path)}"}
    else:
        installs = {CHECKOUT_INSTALL: str(ROOT)}
    runner = Runner(tmp_path / "reader", installs=installs)
    runner.root.mkdir()
    mysql = _mysql_database(f"fresh_{source}")
    assert mysql, "runs in the suite's MySQL/MariaDB pass"
    settings, name = mysql
    runner.replacements = {
        TUTORIAL_DATABASE_URL: _mysql_url(settings, name),
        "CREATE DATABASE mysite": f"CREATE DATABASE {name}",
    }
    _mysql(settings, f"DROP DATABASE IF EXISTS {name}")
    with _cleaned_up(runner, mysql):
        runner.follow(TUTORIAL, mysql=source == "git")
    assert runner.venv_bin and runner.venv_bin.is_relative_to(tmp_path)
    assert not runner.venv_bin.is_relative_to(ROOT)
    shown = subprocess.run(
        [str(runner.venv_bin / "pip"), "show", "-f", "django-skipqueue"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"^Location: .*/reader/\.venv/", shown, re.M), shown
    assert "django_skipqueue/migrations/0001_initial.py" in shown
    assert (runner.stopped_at is None) == (source == "git"), runner.stopped_at
    assert list((runner.cwd / "sent_emails").iterdir())
