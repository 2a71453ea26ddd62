"""Prefect's temporary server begun early (``flows.temporary_server.start_early``), in new processes without an API
URL, as a command starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import psutil
from prefect.server.api import server as prefect_server
from prefect.settings import get_current_settings

from citesum.flows.temporary_server import uvicorn_command, uvicorn_environment

SCRIPT = """
import json, os, sys
from citesum.flows.temporary_server import start_early
hand_over = start_early()
(early,) = [p for p in __import__("psutil").Process().children() if "uvicorn" in " ".join(p.cmdline())]
print(json.dumps({"early": early.pid, "imported": "prefect.server.api.server" in sys.modules}), flush=True)
if sys.argv[1] == "fail":
    raise SystemExit("failed before the run")
from prefect import flow
from prefect.server.api.server import SubprocessASGIServer

@flow
def answer() -> int:
    return 42

hand_over()
server = SubprocessASGIServer()
print(json.dumps({"serving": server.server_process.pid, "answer": answer()}), flush=True)
"""


def run_script(tmp_path, mode: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr
    return lines


def gone(pid: int, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_the_early_process_is_the_server_prefect_runs_on_and_is_stopped_at_exit(tmp_path):
    first, second = run_script(tmp_path, "run")
    assert first["imported"] is False  # begun before Prefect's server modules are imported here
    assert second == {"serving": first["early"], "answer": 42}  # no second server begun
    assert gone(first["early"])


def test_a_command_that_fails_before_its_run_leaves_no_server_behind(tmp_path):
    (first,) = run_script(tmp_path, "fail")
    assert gone(first["early"])


def test_the_process_is_begun_as_prefect_begins_it(monkeypatch):
    begun: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(prefect_server.subprocess, "Popen", lambda args, env: begun.append((args, env)))
    prefect_server.SubprocessASGIServer._run_uvicorn_command(SimpleNamespace(port=8123))
    ((args, env),) = begun
    assert args == uvicorn_command(8123)
    assert env == uvicorn_environment(get_current_settings())
