"""citesum as a service, end to end: a real Prefect server, `citesum serve` and `citesum watch` as
processes, an upload that the event trigger ingests, and a reindex started through the API.

Not under tests/flows: these need their own server on a port the child processes can reach, not
the in-process test harness. Every wait is bounded; every process started here is stopped by its
process group, whatever happens.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from prefect import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterKey,
    DeploymentFilter,
    DeploymentFilterId,
)
from prefect.deployments import run_deployment
from prefect.settings import PREFECT_API_URL, temporary_settings
from typer.testing import CliRunner

from citesum.deployments.cli import app
from citesum.deployments.serve import build_deployments, run_environment
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore

BIN = Path(sys.executable).parent
TEST_BUDGET_SECONDS = 240  # the whole service test, after the server is up


class Services:
    """Processes started by the test, each in its own session so its children stop with it."""

    def __init__(self, logs: Path):
        self.logs, self.started = logs, []

    def start(self, name: str, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # closed in stop_all
        process = subprocess.Popen(args, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append((name, process, log))
        return process

    def stop_all(self) -> None:
        for _, process, log in reversed(self.started):
            stop(process)
            log.close()

    def check_alive(self) -> None:
        for name, process, _ in self.started:
            assert process.poll() is None, f"{name} exited with {process.returncode}\n{self.tails()}"

    def tails(self) -> str:
        return "\n".join(
            f"--- {name}.log ---\n{(self.logs / f'{name}.log').read_text(errors='replace')[-3000:]}"
            for name, _, _ in self.started
        )


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group (serve's flow runs are its children), SIGKILL if it lingers."""
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_environment() -> dict[str, str]:
    """This process's environment without Prefect or citesum settings (a harness may have set some)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CITESUM_"))}
    return env | {"HF_HUB_OFFLINE": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def wait_for(what: str, check: Callable[[], object], deadline: float, services: Services, every: float = 1.0):
    """Poll ``check`` until it returns something truthy, a service dies, or the deadline passes."""
    while time.monotonic() < deadline:
        services.check_alive()
        if value := check():
            return value
        time.sleep(every)
    pytest.fail(f"timed out waiting for {what}\n{services.tails()}")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def services(tmp_path_factory) -> Iterator[Services]:
    running = Services(tmp_path_factory.mktemp("logs"))
    try:
        yield running
    finally:
        running.stop_all()


@pytest.fixture(scope="module")
def server(services, tmp_path_factory) -> str:
    """A Prefect server on a free loopback port, with its own PREFECT_HOME (SQLite)."""
    home, port = tmp_path_factory.mktemp("prefect-home"), free_port()
    env = clean_environment() | {"PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "false"}
    args = [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    services.start("server", args, env, cwd=home)
    url = f"http://127.0.0.1:{port}/api"
    wait_for("the Prefect server", lambda: healthy(url), time.monotonic() + 120, services)
    return url


def test_an_upload_is_ingested_by_its_event_and_reindex_runs(server, services, tmp_path, sample):
    deadline = time.monotonic() + TEST_BUDGET_SECONDS
    corpus, inbox, db = tmp_path / "corpus", tmp_path / "inbox", tmp_path / "db"
    corpus.mkdir()
    env = clean_environment() | {
        "PREFECT_API_URL": server,
        "PREFECT_HOME": str(tmp_path / "client-home"),
        "PREFECT_RUNNER_POLL_FREQUENCY": "2",  # serve looks for new runs every 2 s instead of 10
        "CITESUM_CORPUS": str(corpus),
        "CITESUM_DB": str(db),
        "CITESUM_INBOX": str(inbox),
        "CITESUM_RUNS_DIR": str(tmp_path / "runs"),
        "CITESUM_WATCH_POLL_SECONDS": "1",
    }
    elsewhere = tmp_path / "cwd"  # not the project folder: runs must not depend on where serve started
    elsewhere.mkdir()
    services.start("serve", [str(BIN / "citesum"), "serve"], env, cwd=elsewhere)
    services.start("watch", [str(BIN / "citesum"), "watch"], env, cwd=elsewhere)

    with temporary_settings(updates={PREFECT_API_URL: server}), get_client(sync_client=True) as client:
        upload = wait_for(
            "the ingest-upload deployment", lambda: deployment(client, "ingest/ingest-upload"), deadline, services
        )
        wait_for(
            "the upload trigger",
            lambda: any(a.name == "citesum-document-uploaded" for a in client.read_automations()),
            deadline,
            services,
        )
        wait_for("the watcher", lambda: "watching" in (services.logs / "watch.log").read_text(), deadline, services)

        sample.technical_report(tmp_path / "report.pdf")
        shutil.copy(tmp_path / "report.pdf", inbox / "report.pdf")  # a plain copy: complete once stable

        run = wait_for("the triggered run", lambda: finished_run(client, upload.id), deadline, services, every=2.0)
        assert run.state.is_completed(), f"{run.state}\n{services.tails()}"
        assert run.parameters == {"path": str(corpus / "report.pdf")}
        assert (corpus / "report.pdf").is_file() and not (inbox / "report.pdf").exists()
        stored = LanceStore.open(str(db)).documents()
        assert stored["report.pdf"].chunks > 0
        assert LanceStore.open(str(db)).chunk_rows("document_id = 'report.pdf'", ["page_start"])
        assert report_artifact(client, run.id), "no citesum-ingest-report artifact on the triggered run"

        reindex = run_deployment("ingest/reindex", timeout=max(1.0, deadline - time.monotonic()))
        assert reindex.state.is_completed(), f"{reindex.state}\n{services.tails()}"
        assert report_artifact(client, reindex.id)
        assert LanceStore.open(str(db)).documents()["report.pdf"].version == stored["report.pdf"].version


def deployment(client, name: str):
    try:
        return client.read_deployment_by_name(name)
    except Exception:  # ObjectNotFound until serve has registered it
        return None


def finished_run(client, deployment_id):
    runs = client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])))
    return next((r for r in runs if r.state and r.state.is_final()), None)


def report_artifact(client, flow_run_id) -> bool:
    artifacts = client.read_artifacts(
        artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            key=ArtifactFilterKey(any_=["citesum-ingest-report"]),
        )
    )
    return bool(artifacts)


# -- without a server ------------------------------------------------------------------


def test_deployments_carry_only_run_parameters(tmp_path):
    settings = Settings(reindex_cron="30 1 * * *", schedule_timezone="Europe/Paris")
    by_name = {d.name: d for d in build_deployments(settings)}
    assert set(by_name) == {"reindex", "ingest-upload", "summarize", "maintain"}
    [weekly] = by_name["maintain"].schedules
    assert (weekly.schedule.cron, weekly.schedule.timezone) == ("0 3 * * 0", "Europe/Paris")  # Sundays 03:00
    [reindex] = by_name["reindex"].schedules
    assert (reindex.schedule.cron, reindex.schedule.timezone) == ("30 1 * * *", "Europe/Paris")
    [trigger] = by_name["ingest-upload"].triggers
    assert trigger.expect == {"citesum.document.uploaded"}
    assert trigger.parameters == {"path": "{{ event.payload.path }}"}
    assert all(d.parameters == {} for d in by_name.values())


def test_prefect_yaml_is_generated_from_the_served_deployments(monkeypatch):
    for name in [n for n in os.environ if n.startswith("CITESUM_")]:
        monkeypatch.delenv(name)  # the committed file holds the default schedules
    committed = (Path(__file__).resolve().parents[2] / "prefect.yaml").read_text()
    generated = CliRunner().invoke(app, ["deployments", "--yaml"])
    assert generated.exit_code == 0, generated.output
    assert committed == generated.stdout, "prefect.yaml is stale: run `citesum deployments --yaml > prefect.yaml`"
    declared = yaml.safe_load(committed)["deployments"]
    served = {(d.name, d.entrypoint) for d in build_deployments(Settings())}
    assert {(d["name"], d["entrypoint"]) for d in declared} == served
    assert served >= {("reindex", "citesum.flows.ingest.ingest"), ("summarize", "citesum.flows.summarize.summarize")}
    [reindex] = [d for d in declared if d["name"] == "reindex"]
    assert reindex["schedules"] == [{"cron": "0 2 * * *", "timezone": "UTC", "active": True}]
    assert reindex["concurrency_limit"] == 1 and reindex["work_pool"]["name"] == "citesum"


def test_runs_get_absolute_settings_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = run_environment(Settings(corpus=Path("c"), db="s3://bucket/store", chunk_tokens=64))
    assert env["CITESUM_CORPUS"] == str(tmp_path / "c")
    assert env["CITESUM_DB"] == "s3://bucket/store"
    assert env["CITESUM_INBOX"] == str(tmp_path / "data" / "inbox")
    assert "CITESUM_PASSWORDS_FILE" not in env  # unset stays unset
    monkeypatch.chdir("/")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Settings().ingest.corpus == tmp_path / "c" and Settings().chunking.chunk_tokens == 64


@pytest.mark.parametrize("command", [["serve"], ["watch"]])
def test_serve_and_watch_need_a_prefect_server(command):
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        result = CliRunner().invoke(app, command)
    assert result.exit_code == 2 and "PREFECT_API_URL" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--reindex-cron", "every night"], "error: not a cron expression: 'every night'"),
        (
            ["watch", "{tmp}/corpus/inbox", "--corpus", "{tmp}/corpus"],
            "error: the inbox {tmp}/corpus/inbox and the corpus {tmp}/corpus must not contain one another",
        ),
    ],
)
def test_unusable_schedules_and_folders_exit_2(tmp_path, args, message):
    args = [a.format(tmp=tmp_path) for a in args]
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):  # never contacted
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == message.format(tmp=tmp_path.resolve()) + "\n"
