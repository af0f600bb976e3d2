"""The commands' shared arguments: what each accepts, and what each mistake says.

The parsers are the real ones of the seven commands; the last tests run the commands from the
command line, as a user types them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class
from django.test import override_settings

from django_skipqueue.compat import DUMMY_BACKEND
from django_skipqueue.management import arguments
from tests.support import docpages

pytestmark = pytest.mark.vendor_neutral

COMMANDS = sorted(name for name, app in get_commands().items() if app == "django_skipqueue")
#: Every command of the package: the seven above and those of its optional apps.
EVERY_APP = {name: app for name, app in get_commands().items() if app.startswith("django_skipq")}
#: Positional arguments a command needs before its options can be parsed.
REQUIRED = {"skipqueue_pause": ["default"], "skipqueue_resume": ["default"]}
#: A value for each standard option that takes one.
STANDARD_VALUES = {
    "--settings": "testproject.settings",
    "--pythonpath": ".",
    "--verbosity": "1",
}
DUMMY = {"BACKEND": DUMMY_BACKEND}


def parser_of(name: str) -> argparse.ArgumentParser:
    return load_command_class(EVERY_APP[name], name).create_parser("manage.py", name)


def standard_options() -> list[str]:
    """The options the reference says every command takes, from its opening paragraph."""
    intro = docpages.read("reference/commands.md").split("\n## ", 1)[0]
    sentence = re.search(r"standard options \((.*?)\)", intro, re.S)
    assert sentence, "docs/reference/commands.md no longer lists the standard options"
    return re.findall(r"`(--[a-z-]+)`", sentence.group(1))


def test_there_are_seven_commands():
    assert len(COMMANDS) == 7, COMMANDS


@pytest.mark.parametrize("name", sorted(EVERY_APP))
def test_every_command_takes_the_standard_options_the_reference_lists(name):
    options = standard_options()
    assert "--skip-checks" in options
    for option in options:
        value = [STANDARD_VALUES[option]] if option in STANDARD_VALUES else []
        parsed = parser_of(name).parse_args([*REQUIRED.get(name, []), option, *value])
        assert getattr(parsed, option[2:].replace("-", "_")) not in (None, False), option


@pytest.mark.parametrize("name", COMMANDS)
def test_every_backend_option_has_the_same_name_default_and_help(name):
    [backend] = [a for a in parser_of(name)._actions if a.dest == "backend"]
    assert (backend.default, backend.metavar) == ("default", "ALIAS")
    assert backend.help.endswith("(default: %(default)r).")


@pytest.mark.django_db(transaction=True)
def test_skipqueue_health_runs_with_skip_checks_from_the_command_line(child_env, manage_py):
    """Exit 3 (no live worker) shows the check ran; the option used to end it with exit 2."""
    done = subprocess.run(
        [*manage_py, "skipqueue_health", "--skip-checks"],
        env=child_env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "UNHEALTHY: no live worker" in done.stderr


def test_purge_status_mistake_lists_the_values_to_type():
    with pytest.raises(CommandError) as raised:
        call_command("skipqueue_purge", "--status", "ready")
    message = str(raised.value)
    assert "invalid choice: 'ready'" in message
    assert "JobStatus" not in message
    for value in ("succeeded", "failed", "cancelled"):
        assert f"'{value}'" in message
    assert "succeeded, failed, cancelled" in " ".join(
        parser_of("skipqueue_purge").format_help().split()
    )


@pytest.mark.parametrize("minutes", ["0", "61", "90"])
def test_status_minutes_out_of_range_says_the_range(minutes):
    with pytest.raises(CommandError, match=f"--minutes: must be 1 to 60 minutes, not {minutes}"):
        call_command("skipqueue_status", "--minutes", minutes)


@pytest.mark.django_db
@pytest.mark.parametrize("minutes", ["1", "60"])
def test_status_minutes_at_the_bounds_are_taken(minutes, capsys):
    call_command("skipqueue_status", "--minutes", minutes)
    assert f"over the last {minutes} minute(s)" in capsys.readouterr().out


#: Command and extra arguments -> the message an unknown backend alias ends with.
UNKNOWN_BACKEND = {
    "runworkers": ([], "There is no task backend 'nope' in TASKS."),
    "skipqueue_purge": (["--older-than", "7d"], "There is no task backend 'nope' in TASKS."),
    "skipqueue_reap": ([], "There is no task backend 'nope' in TASKS."),
    "skipqueue_status": ([], "There is no task backend 'nope' in TASKS."),
    "skipqueue_health": (
        [],
        "UNHEALTHY: cannot check the queue: There is no task backend 'nope' in TASKS.",
    ),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_BACKEND))
def test_an_unknown_backend_is_a_command_error(name):
    extra, message = UNKNOWN_BACKEND[name]
    with pytest.raises(CommandError) as raised:
        call_command(name, "--backend", "nope", *extra)
    assert str(raised.value) == message


@pytest.mark.parametrize("name", ["runworkers", "skipqueue_status", "skipqueue_reap"])
def test_a_backend_of_another_kind_is_a_command_error(name):
    tasks = {"default": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}, "dummy": DUMMY}
    with override_settings(TASKS=tasks), pytest.raises(CommandError) as raised:
        call_command(name, "--backend", "dummy")
    assert str(raised.value) == "Task backend 'dummy' is a DummyBackend, not a SkipQueueBackend."


class Refused(str):
    """The start of the error message an argument type raises."""


#: type -> [(text, the value it returns or the message it is refused with)].
CASES = {
    arguments.positive_int: [
        ("1", 1),
        ("12", 12),
        ("0", Refused("must be at least 1, not 0")),
        ("-3", Refused("must be at least 1, not -3")),
        ("2.5", Refused("'2.5' is not a number")),
    ],
    arguments.positive_float: [
        ("0.5", 0.5),
        ("3", 3.0),
        ("0", Refused("must be greater than 0, not 0")),
        ("nan", Refused("must be greater than 0, not nan")),
        ("x", Refused("'x' is not a number")),
    ],
    arguments.non_negative_float: [
        ("0", 0.0),
        ("1.5", 1.5),
        ("-0.1", Refused("must be 0 or more, not -0.1")),
    ],
    arguments.int_between(1, 60, "minutes"): [
        ("1", 1),
        ("60", 60),
        ("61", Refused("must be 1 to 60 minutes, not 61")),
        ("five", Refused("'five' is not a number")),
    ],
    arguments.duration: [
        ("7d", timedelta(days=7)),
        ("90", timedelta(seconds=90)),
        ("seven days", Refused("'seven days' is not a duration")),
    ],
    arguments.queue_list: [
        ("emails", ["emails"]),
        (" default , emails,", ["default", "emails"]),
        (",", Refused("give at least one queue name")),
    ],
}


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [(kind, text, expected) for kind, cases in CASES.items() for text, expected in cases],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_argument_types(kind, text, expected):
    if isinstance(expected, Refused):
        with pytest.raises(argparse.ArgumentTypeError) as raised:
            kind(text)
        assert str(raised.value).startswith(expected)
    else:
        assert kind(text) == expected
