"""What a figure was measured on: the machine, its load, and the database settings that matter."""

from __future__ import annotations

import os
import platform
import subprocess

import psutil

from benchmarks.backlog import connect

SERVER_VARIABLES = (
    "version",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "binlog_format",
    "transaction_isolation",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_autoinc_lock_mode",
    "innodb_doublewrite",
)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, object]:
    """CPU model, cores, memory, kernel and the load when asked."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def database() -> dict[str, object]:
    """The server settings that decide a queue's speed (durability, binlog, isolation, memory).

    ``transaction_isolation`` is the server default; every system here connects at READ
    COMMITTED (Django's MySQL default, set explicitly for the raw reference).
    """
    cursor = connect().cursor()
    names = ", ".join(f"'{name}'" for name in (*SERVER_VARIABLES, "tx_isolation"))
    cursor.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
    found = dict(cursor.fetchall())
    if "transaction_isolation" not in found and "tx_isolation" in found:
        found["transaction_isolation"] = found.pop("tx_isolation")
    found.pop("tx_isolation", None)
    return {name: found.get(name) for name in SERVER_VARIABLES}


def redis_version() -> str | None:
    try:
        out = subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "INFO", "server"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if line.startswith("redis_version:"):
            return line.split(":", 1)[1].strip()
    return None


def busy_processes() -> list[str]:
    """Other test or worker runs on this machine (they would disturb a measurement)."""
    mine = os.getpid()
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        other = proc.info["pid"] != mine and "benchmarks" not in cmd
        if other and ("pytest" in cmd or "runworkers" in cmd):
            found.append(f"{proc.info['pid']}: {cmd[:100]}")
    return found
