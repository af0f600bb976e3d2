"""The benchmark harness works: its quick mode runs one scenario end to end.

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
