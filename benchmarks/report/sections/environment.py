"""The machine and the database the suite last ran on (raw/environment.json)."""

from __future__ import annotations

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section


@section(30, "environment")
def environment(inputs: Inputs) -> str:
    env, quick = inputs.results["environment"], inputs.quick
    m, db = env["machine"], env["database"]
    pool = int(db.get("innodb_buffer_pool_size") or 0) / 2**20
    rows = [
        ["CPU", f"{m['cpu']}, {m['cores']} cores"],
        ["Memory", f"{m['ram_gib']} GiB"],
        ["Kernel, Python", f"{m['kernel']}, Python {m['python']}"],
        ["Database", f"{db.get('version')}, on the same host (loopback TCP)"],
        ["innodb_flush_log_at_trx_commit", str(db.get("innodb_flush_log_at_trx_commit"))],
        [
            "Binary log",
            f"log_bin={db.get('log_bin')}, binlog_format={db.get('binlog_format')},"
            f" sync_binlog={db.get('sync_binlog')}",
        ],
        [
            "Isolation",
            "READ COMMITTED on every connection (server default "
            f"{db.get('transaction_isolation')})",
        ],
        ["innodb_buffer_pool_size", f"{pool:.0f} MiB"],
        ["Redis", str(env.get("redis"))],
        [
            "Runs per figure",
            f"{env.get('reps')}{' (quick mode: smoke figures only)' if quick else ''}",
        ],
    ]
    versions = env.get("versions") or {}
    if versions:
        rows.append(["Peers", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))])
    note = (
        "\n\nThe CPU, kernel and Python above are those of the latest invocation. Scenarios run"
        " on their own are re-measured on whichever host of the same kind the session had: each"
        " scenario below states when it ran, on which CPU and Python, the load average at its"
        " start and how many other test or worker processes were running then. Compare systems"
        " within one scenario (they ran interleaved on the same host), not across scenarios."
    )
    return "## The machine and the database\n\n" + table(["", ""], rows) + note
