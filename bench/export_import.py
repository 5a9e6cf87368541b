"""Time and peak memory of ``palaver export`` and ``palaver import`` for a large realm.

Run: .venv/bin/python bench/export_import.py [--messages 1000000] [--subscribers 10]
                                             [--database-url URL --target-database-url URL]

Makes an organization with the CLI in a temporary data directory (SQLite unless
--database-url is given), fills it with ``palaver seed-messages``, exports it with
``palaver export`` and imports the archive into a second, empty database (a second
SQLite file unless --target-database-url is given). Each command runs as its own process;
its wall time and peak resident memory (``wait4``'s ru_maxrss) are printed, with the
archive's size and row counts. Both databases should be scratch ones.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from common import clean_environment, exit_on_sigterm, palaver, run_cli
from users_me import create_bench_realm


def measured(env: dict[str, str], *args: str) -> tuple[float, float, float, str]:
    """Run a palaver command; (wall seconds, CPU seconds, peak RSS in MiB, stdout)."""
    started = time.monotonic()
    process = subprocess.Popen(
        palaver(*args), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    # Read after exit: the commands print a few lines only (no progress bar off a terminal).
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:  # stopped (exit_on_sigterm, Ctrl-C): the command goes too
        process.kill()
        process.wait()
        raise
    seconds = time.monotonic() - started
    out, err = process.stdout.read().decode(), process.stderr.read().decode()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"palaver {args[0]} failed:\n{err}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--subscribers", type=int, default=10, help="users receiving each channel message")
    parser.add_argument("--database-url", help="source database (default: SQLite in a temporary directory)")
    parser.add_argument("--target-database-url", help="empty target database (default: a second SQLite file)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    exit_on_sigterm()

    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-export-"))
    try:
        source_env = clean_environment(
            PALAVER_DATA_DIR=str(tmp / "source"),
            PALAVER_PASSWORD_TIME_COST="1",
            PALAVER_PASSWORD_MEMORY_COST_KIB="8",
        )
        if args.database_url:
            source_env["PALAVER_DATABASE_URL"] = args.database_url
        target_env = dict(source_env, PALAVER_DATA_DIR=str(tmp / "target"))
        target_env.pop("PALAVER_DATABASE_URL", None)
        if args.target_database_url:
            target_env["PALAVER_DATABASE_URL"] = args.target_database_url

        string_id, _, _ = create_bench_realm(source_env)
        started = time.monotonic()
        run_cli(
            source_env,
            "seed-messages",
            "--realm",
            string_id,
            "--messages",
            str(args.messages),
            "--subscribers",
            str(args.subscribers),
            "--quiet",
        )
        seeded = time.monotonic() - started
        archive = tmp / "export.zip"
        export_s, export_cpu, export_mib, _ = measured(
            source_env, "export", string_id, str(archive), "--quiet"
        )
        run_cli(target_env, "migrate")
        import_s, import_cpu, import_mib, _ = measured(target_env, "import", str(archive), "--quiet")
        with zipfile.ZipFile(archive) as zf:
            tables = json.loads(zf.read("manifest.json"))["tables"]
        rows = sum(t["rows"] for t in tables.values())

        print(f"# {platform.node()} load average {os.getloadavg()[0]:.2f}; seeding took {seeded:.0f}s")
        print(
            f"messages {tables['message']['rows']:,}, user_message rows {tables['user_message']['rows']:,},"
            f" all rows {rows:,}, archive {archive.stat().st_size / 2**20:,.0f} MiB"
        )
        print(f"{'step':<8} {'wall s':>8} {'CPU s':>8} {'rows/s':>10} {'peak RSS MiB':>13}")
        for step, seconds, cpu, mib in (
            ("export", export_s, export_cpu, export_mib),
            ("import", import_s, import_cpu, import_mib),
        ):
            print(f"{step:<8} {seconds:>8.1f} {cpu:>8.1f} {rows / seconds:>10,.0f} {mib:>13.0f}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
