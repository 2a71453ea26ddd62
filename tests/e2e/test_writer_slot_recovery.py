"""A run killed while it holds the writer slot, on Prefect's temporary server (no PREFECT_API_URL).

The temporary server keeps slot leases in memory, so the kill leaves the slot taken in the database the
next run opens. The next citesum process frees it when no other citesum process is alive, and only then.
Each step is a separate process with its own temporary server, as when a user reruns `citesum ingest`.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.writer import LIVE_LOCK, RESET_COMMAND, WRITER_LIMIT

BIN = Path(sys.executable).parent
STEP_TIMEOUT = 240

HOLD_AND_WAIT = f"""
import time
from prefect.concurrency.sync import concurrency
from citesum.tasks.store.writer import ensure_writer_limit
ensure_writer_limit()
with concurrency({WRITER_LIMIT!r}, occupy=1, strict=True):
    print("holding", flush=True)
    time.sleep({STEP_TIMEOUT})
"""

ACTIVE_SLOTS = f"""
from prefect import get_client
with get_client(sync_client=True) as client:
    print(client.read_global_concurrency_limit_by_name({WRITER_LIMIT!r}).active_slots)
"""


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",  # as the CLI sets it; a first start migrates
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    return env


@pytest.fixture
def corpus(tmp_path, sample) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    sample.services_agreement(folder / "agreement.pdf")
    return folder


def kill_while_holding_the_slot(env: dict[str, str]) -> None:
    """Take the slot in a process, then SIGKILL it with its temporary server (its process group)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_AND_WAIT], env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        line = ""
        while holder.poll() is None and line != "holding\n":  # readline blocks; the timeout is the sleep's
            line = holder.stdout.readline()
        assert line == "holding\n", f"the holder exited with {holder.returncode} before taking the slot"
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        holder.stdout.close()
    assert active_slots(env) == 1  # the kill left the slot taken


def active_slots(env: dict[str, str]) -> int:
    shown = subprocess.run(
        [sys.executable, "-c", ACTIVE_SLOTS], env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT
    )
    assert shown.returncode == 0, shown.stderr
    return int(shown.stdout.split()[-1])


def ingest(corpus: Path, db: Path, env: dict[str, str], wait_seconds: int) -> subprocess.CompletedProcess:
    # --verbose: the slot recovery is an engine log line, on the terminal only then; --json: notes whole
    return subprocess.run(
        [BIN / "citesum", "--verbose", "ingest", str(corpus), "--db", str(db), "--json"],
        env={**env, "CITESUM_WRITER_WAIT_SECONDS": str(wait_seconds)},
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )


def test_the_next_run_frees_a_slot_left_by_a_killed_run(tmp_path, corpus, env):
    kill_while_holding_the_slot(env)

    run = ingest(corpus, tmp_path / "db", env, wait_seconds=60)

    assert run.returncode == 0, run.stdout + run.stderr
    assert f"freed 1 {WRITER_LIMIT} slot(s) left taken by a citesum run that was killed" in run.stdout + run.stderr
    assert set(LanceStore.open(str(tmp_path / "db")).documents()) == {"agreement.pdf"}
    assert active_slots(env) == 0


def test_a_slot_is_not_freed_while_another_citesum_process_lives(tmp_path, corpus, env):
    kill_while_holding_the_slot(env)
    home = Path(env["PREFECT_HOME"])
    other = os.open(home / LIVE_LOCK, os.O_RDWR | os.O_CREAT)  # what a living citesum process holds
    fcntl.flock(other, fcntl.LOCK_SH)
    try:
        run = ingest(corpus, tmp_path / "db", env, wait_seconds=5)
    finally:
        os.close(other)

    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert "writing agreement.pdf: the citesum-writer slot stayed taken for 5 s" in output
    assert RESET_COMMAND in output
    assert active_slots(env) == 1
