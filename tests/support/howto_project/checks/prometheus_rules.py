"""Check docs/howto/prometheus.md's alerting rules: Prometheus's own tool accepts them."""

import shutil
import subprocess

done = subprocess.run(
    [shutil.which("promtool") or "/usr/bin/promtool", "check", "rules", "alerts.yml"],
    capture_output=True,
    text=True,
    timeout=60,
)
assert done.returncode == 0, done.stdout + done.stderr
assert "SUCCESS: 3 rules found" in done.stdout, done.stdout
