"""Run every core entry point in a project without one optional app (a child process).

``python without_app.py APP``, with DJANGO_SETTINGS_MODULE naming settings that drop ``APP``
(``settings_without``). Prints one JSON line: what each entry point answered.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import django


def call(*args: str) -> tuple[int, str]:
    """Run a management command in this process: its exit status and what it printed."""
    from django.core.management import call_command

    out = io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(out):
        try:
            call_command(*args, stdout=out, stderr=out)
        except SystemExit as exit:
            code = int(exit.code or 0)
    return code, out.getvalue()


def pages() -> dict[str, Any]:
    """The dashboard and the metrics view, through the test client as a superuser."""
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_superuser("seam", "seam@example.com", "x")
    client = Client()
    client.force_login(user)
    dashboard = client.get("/admin/django_skipqueue/job/dashboard/")
    metrics = client.get("/skipqueue/metrics")
    return {
        "dashboard": [dashboard.status_code, dashboard.content.decode()],
        "metrics": [metrics.status_code, metrics.content.decode()],
    }


def main() -> None:
    django.setup()
    from django.apps import apps

    from tests.support.worker_tasks import slow_record

    found: dict[str, Any] = {"installed": [c.name for c in apps.get_app_configs()]}
    found["check"] = call("check")
    found["status"] = call("skipqueue_status", "--json")
    found["health"] = call("skipqueue_health", "--json")
    job = slow_record.enqueue(0.0, "seam")
    found["runworkers"] = call("runworkers", "--burst", "--processes", "1", "--no-wakeup")
    found["job"] = str(slow_record.get_backend().get_result(job.id).status)
    found.update(pages())
    sys.stdout.write(json.dumps(found) + "\n")


if __name__ == "__main__":
    main()
