"""The peers' own virtualenv (benchmarks/.venv-peers), made with this interpreter's Python.

The peers' packages never enter the project's environment: each peer runs from here with
its own settings module. The versions are pinned so that a figure names what it measured.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.systems import PEERS_PYTHON, PEERS_VENV

PEER_PACKAGES = (
    "Django==6.1.3",
    "mysqlclient==2.3.2",
    "psutil==7.2.2",
    "django-environ==0.14.0",
    "django-tasks-db==0.13.0",
    "django-ox==1.9.1",
    "django-q2==1.11.1",
    "celery[redis]==5.7.0",
)


def ensure() -> None:
    """Create the virtualenv and install the peers unless they are there already."""
    marker = PEERS_VENV / ".installed"
    wanted = "\n".join(PEER_PACKAGES)
    if marker.exists() and marker.read_text() == wanted:
        return
    if not Path(PEERS_PYTHON).exists():
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(PEERS_VENV)], check=True)
    pip = [PEERS_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *PEER_PACKAGES], check=True)
    marker.write_text(wanted)


def versions() -> dict[str, str]:
    """The installed versions of the peers (for the report)."""
    out = subprocess.run(
        [PEERS_PYTHON, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    import json

    wanted = {"django", "django-tasks-db", "django-ox", "django-q2", "celery", "kombu", "redis"}
    return {
        p["name"]: p["version"] for p in json.loads(out or "[]") if p["name"].lower() in wanted
    }
