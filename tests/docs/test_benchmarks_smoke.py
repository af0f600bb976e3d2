"""The benchmark harness works: its quick mode runs one scenario end to end, and every
scenario that runs on its own starts as a command.

Figures are not checked (timing belongs to the benchmark report, not to tests); only that
the harness drives real workers against the real database and writes its results.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.harness import output_dir, page
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.mysql]


def test_quick_batch_sweep_of_ours_and_the_raw_reference_writes_results():
    raw = output_dir(quick=True) / "raw" / "sweep.json"
    raw.unlink(missing_ok=True)
    command = [sys.executable, "-m", "benchmarks", "run", "--quick", "--reps", "1",
               "--only", "sweep", "--systems", "ours,raw"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads(raw.read_text())
    for config in ("1/each", "16/batch"):
        for system in ("ours", "raw"):
            figures = result["table"][config][system]
            assert figures["jobs_per_s"]["runs"] == 1
            assert figures["jobs_per_s"]["median"] > 0
    assert "Scenario 6" in page(quick=True).read_text()


def test_every_scenario_that_runs_on_its_own_starts_as_a_command():
    """``python -m benchmarks NAME --help`` imports each module and parses its options."""
    code = (
        "from benchmarks.__main__ import main, standalone\n"
        "for name in standalone():\n"
        "    try:\n"
        "        main([name, '--help'])\n"
        "    except SystemExit as stop:\n"
        "        assert stop.code in (0, None), (name, stop.code)\n"
        "    else:\n"
        "        raise AssertionError(f'{name} ran instead of printing its options')\n"
        "    print('started', name, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    names = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("started")}
    assert {"throughput", "hotpath_ab", "outbox_ab", "flow_drain", "ab"} <= names
    for name in names:
        assert f"usage: python -m benchmarks {name}" in done.stdout
