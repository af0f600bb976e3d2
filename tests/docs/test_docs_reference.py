"""The reference pages against the code: every setting, option, field, exception and check id.

Each test fails both ways: something in the code that the reference does not document, and
something the reference documents that the code does not have (a renamed or removed name).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

from django_skipqueue import conf, exceptions
from django_skipqueue.compat import Task
from django_skipqueue.models import JobStatus
from django_skipqueue.tasks import SkipQueueTask
from tests.support import docpages

PACKAGE = Path(__file__).resolve().parents[2] / "django_skipqueue"
SETTING_HEADING = re.compile(r"^`SKIPQUEUE_(\w+)`$")
DEFAULT_LINE = re.compile(r"^Default: `(.+?)`", re.MULTILINE)


def _setting_defaults() -> dict[str, object]:
    defaults = {}
    for field in dataclasses.fields(conf.SkipQueueSettings):
        factory = field.default_factory
        has_factory = factory is not dataclasses.MISSING
        defaults[field.name] = factory() if has_factory else field.default  # type: ignore[misc]
    return defaults


def _documented_settings() -> dict[str, str]:
    documented = {}
    for section in docpages.sections(docpages.DOCS / "reference" / "settings.md"):
        match = SETTING_HEADING.match(section.title)
        if match:
            default = DEFAULT_LINE.search(section.text)
            assert default, f"SKIPQUEUE_{match.group(1)} has no 'Default: `...`' line"
            documented[match.group(1)] = default.group(1)
    return documented


def test_every_setting_is_documented_with_its_default():
    documented = _documented_settings()
    defaults = _setting_defaults()
    assert sorted(documented) == sorted(defaults)
    for name, default in defaults.items():
        assert ast.literal_eval(documented[name]) == default, f"SKIPQUEUE_{name}"


def test_every_task_option_is_documented():
    own = {f.name for f in dataclasses.fields(SkipQueueTask)} - {
        f.name for f in dataclasses.fields(Task)
    }
    django_options = {"priority", "queue_name", "run_after", "backend", "takes_context"}
    page = docpages.DOCS / "reference" / "task-options.md"
    headings = {s.title.strip("`") for s in docpages.sections(page) if s.level == 3}
    assert headings == own | django_options


def test_every_backend_option_is_documented():
    source = (PACKAGE / "backend.py").read_text()
    used = set(re.findall(r"options(?:\.get\(|\[)\"([A-Z_]+)\"", source))
    assert used, "the option pattern no longer matches backend.py"
    section = docpages.section_titled("reference", "`OPTIONS`")
    assert section is not None
    documented = set(re.findall(r"^`([A-Z_]+)`$", section.text, re.MULTILINE))
    assert documented == used


def test_every_model_field_is_documented():
    page = docpages.DOCS / "reference" / "models.md"
    by_model = {s.title.split("`")[1]: s.text for s in docpages.sections(page) if s.level == 2}
    models = apps.get_app_config("django_skipqueue").get_models()
    assert sorted(by_model) == sorted(model.__name__ for model in models)
    for model in models:
        rows = set(re.findall(r"^\| `(\w+)` \|", by_model[model.__name__], re.MULTILINE))
        fields = {field.name for field in model._meta.concrete_fields}
        assert rows == fields, model.__name__


def test_every_reservation_model_field_is_documented():
    page = docpages.DOCS / "reference" / "reservations.md"
    by_model = {s.title.split("`")[1]: s.text for s in docpages.sections(page) if s.level == 3}
    models = list(apps.get_app_config("skipqueue_reservations").get_models())
    assert sorted(by_model) == sorted(model.__name__ for model in models)
    for model in models:
        rows = set(re.findall(r"^\| `(\w+)` \|", by_model[model.__name__], re.MULTILINE))
        fields = {field.name for field in model._meta.fields}
        assert rows == fields, model.__name__
        assert f"(`{model._meta.db_table}`)" in page.read_text()


def test_every_outbox_model_field_is_documented():
    page = docpages.DOCS / "reference" / "outbox.md"
    heading = re.compile(r"^`(\w+)` \(`(\w+)`\)$")
    by_model = {
        match.group(1): (match.group(2), section.text)
        for section in docpages.sections(page)
        if (match := heading.match(section.title))
    }
    models = list(apps.get_app_config("skipqueue_outbox").get_models())
    assert sorted(by_model) == sorted(model.__name__ for model in models)
    for model in models:
        table, text = by_model[model.__name__]
        assert table == model._meta.db_table
        rows = set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
        assert rows == {field.name for field in model._meta.concrete_fields}, model.__name__


def test_every_schedule_model_field_is_documented():
    page = docpages.DOCS / "reference" / "scheduling.md"
    by_model = {s.title.split("`")[1]: s.text for s in docpages.sections(page) if s.level == 3}
    models = list(apps.get_app_config("skipqueue_scheduling").get_models())
    assert sorted(by_model) == sorted(model.__name__ for model in models)
    for model in models:
        rows = set(re.findall(r"^\| `(\w+)` \|", by_model[model.__name__], re.MULTILINE))
        assert rows == {field.name for field in model._meta.fields}, model.__name__
        assert f"(`{model._meta.db_table}`)" in page.read_text()


def test_every_workflow_model_field_is_documented():
    page = docpages.DOCS / "reference" / "workflows.md"
    by_model = {s.title.split("`")[1]: s.text for s in docpages.sections(page) if s.level == 3}
    models = list(apps.get_app_config("skipqueue_workflows").get_models())
    assert sorted(by_model) == sorted(model.__name__ for model in models)
    for model in models:
        rows = set(re.findall(r"^\| `(\w+)` \|", by_model[model.__name__], re.MULTILINE))
        assert rows == {field.name for field in model._meta.fields}, model.__name__
        assert f"(`{model._meta.db_table}`)" in page.read_text()


def test_every_exception_is_documented():
    text = docpages.read("reference/exceptions.md")
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
    defined = {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and value.__module__ == exceptions.__name__
    }
    assert documented == defined


def test_every_system_check_id_is_documented():
    in_code = set()
    for path in PACKAGE.rglob("*.py"):
        in_code |= set(re.findall(r"django_skipqueue\.[EW]\d{3}", path.read_text()))
    checks_page = docpages.read("reference/checks.md")
    documented = set(re.findall(r"`(django_skipqueue\.[EW]\d{3})`", checks_page))
    assert in_code, "no check ids found in the package"
    assert documented == in_code


@pytest.mark.parametrize("page", docpages.pages("reference"), ids=lambda p: p.name)
def test_settings_named_anywhere_in_the_reference_exist(page: Path):
    names = set(re.findall(r"SKIPQUEUE_([A-Z][A-Z_]*[A-Z])", page.read_text()))
    unknown = names - set(_setting_defaults())
    assert not unknown, f"{page.name} names settings that do not exist: {unknown}"


def _app_commands() -> dict[str, BaseCommand]:
    return {
        name: load_command_class(app, name)
        for name, app in get_commands().items()
        if app
        in (
            "django_skipqueue",
            "django_skipqueue.outbox",
            "django_skipqueue.reservations",
            "django_skipqueue.scheduling",
        )
    }


def _own_actions(command: BaseCommand, name: str) -> list[argparse.Action]:
    """The command's own options and arguments, without Django's standard ones."""
    standard = {a.dest for a in BaseCommand().create_parser("manage.py", "x")._actions}
    parser = command.create_parser("manage.py", name)
    return [action for action in parser._actions if action.dest not in standard]


def _option_rows(name: str) -> dict[str, str]:
    """Option (or argument) -> its Default cell, from the command's table in commands.md."""
    page = docpages.DOCS / "reference" / "commands.md"
    section = next((s for s in docpages.sections(page) if s.title == f"`{name}`"), None)
    assert section is not None, f"docs/reference/commands.md has no section `{name}`"
    rows = re.findall(r"^\| `([-\w]+)` \| (.*?) \|", section.text, re.MULTILINE)
    return {option: default for option, default in rows if option != "Option"}


def test_every_command_is_documented():
    page = docpages.DOCS / "reference" / "commands.md"
    documented = {s.title.strip("`") for s in docpages.sections(page) if s.level == 2}
    assert documented == set(_app_commands())


@pytest.mark.parametrize("name", sorted(_app_commands()))
def test_every_command_option_is_documented_with_its_default(name: str):
    """Options match the real parser both ways, and literal defaults are the parser's."""
    rows = _option_rows(name)
    actions = _own_actions(_app_commands()[name], name)
    names = {(a.option_strings or [a.metavar or a.dest])[-1] for a in actions}
    assert set(rows) == names
    for action in actions:
        cell = rows[(action.option_strings or [action.metavar or action.dest])[-1]]
        if action.default not in (None, False, "") and not isinstance(action.default, list):
            assert f"`{action.default}`" in cell, f"{name} {action.option_strings}: {cell}"


def test_state_diagram_draws_every_status_and_numbered_transition():
    """The hand-drawn SVG parses, and it and the table agree with JobStatus and each other."""
    from xml.etree import ElementTree

    svg = ElementTree.parse(docpages.DOCS / "discussions" / "job-states.svg")
    texts = [
        (element.text or "").strip() for element in svg.iter("{http://www.w3.org/2000/svg}text")
    ]
    states = {status.value for status in JobStatus}
    assert states <= set(texts)
    drawn = {int(match.group(1)) for text in texts if (match := re.match(r"^(\d+) ", text))}
    page = docpages.read("discussions/job-states.md")
    listed = {int(n) for n in re.findall(r"^\| (\d+) \|", page, re.MULTILINE)}
    assert drawn == listed == set(range(1, max(listed) + 1))
    assert "](job-states.svg)" in page
    for status in states:
        assert f"`{status}`" in page


def _statements(sql: str) -> list[str]:
    without_comments = re.sub(r"--[^\n]*", "", sql)
    return [s.strip() for s in without_comments.split(";") if s.strip()]


@pytest.mark.mysql
@pytest.mark.django_db
def test_tune_mysql_queries_run_and_the_claim_plan_is_as_documented():
    """Every SQL sample of the MySQL tuning guide runs on the server the suite uses.

    Within a block, a statement may name a system variable of another server version (error
    1193) as long as another statement of the same block runs.
    """
    from django.db import DatabaseError, connection

    blocks = [b for b in docpages.code_blocks(docpages.DOCS / "howto" / "tune-mysql.md")]
    sql_blocks = [b for b in blocks if b.language == "sql"]
    assert sql_blocks
    for block in sql_blocks:
        ran = 0
        for statement in _statements(block.text):
            try:
                with connection.cursor() as cursor:
                    cursor.execute(statement)
                    rows = cursor.fetchall()
                    columns = [c[0] for c in cursor.description or ()]
            except DatabaseError as error:
                assert error.args[0] == 1193, f"{block.where}: {statement}: {error}"
                continue
            ran += 1
            if statement.startswith("EXPLAIN"):
                plan = dict(zip(columns, rows[0], strict=True))
                assert plan["key"] == "skipqueue_claim"
                assert "filesort" not in (plan["Extra"] or "")
        assert ran, f"{block.where}: no statement ran"
