"""Ingestion on Dask worker processes stores what the thread runner stores, loading the model once per worker."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.task_runners import ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner
from typer.testing import CliRunner

from citesum.deployments.cli import app
from citesum.flows.ingest import run_ingest
from citesum.flows.runners import task_runner_for
from citesum.tasks.embed import load_embedder
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import DEFAULT_EMBED_MODEL, Settings
from citesum.tasks.store.lance import LanceStore

WAIT = 120  # seconds: the bound on starting a worker process, connecting, and closing a cluster
CHUNK_COLUMNS = ("chunk_id", "document_id", "version", "source", "page_start", "page_end", "heading", "text", "ordinal")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, sample) -> Path:
    folder = tmp_path_factory.mktemp("dask") / "corpus"
    sample.write_sample_corpus(folder)  # three PDFs, one with an image-only page
    return folder


def settings_for(folder: Path, db: Path, runner: str) -> Settings:
    # OCR off: the scanned page is then a recorded problem, which costs no Tesseract time on 2 cores.
    return Settings(corpus=folder, db=str(db), ocr=False, workers=2, runner=runner)


def ingested(settings: Settings):
    state = run_ingest(None, settings)
    report = state.result(raise_on_failure=False)
    assert state.is_completed(), report
    assert {o.status for o in report.outcomes} == {"new"}
    return state


def stored(db: str) -> dict:
    """What a run leaves in the store, without write times."""
    store = LanceStore.open(db)
    rows = sorted(store.chunk_rows(), key=lambda r: r["chunk_id"])
    return {
        "chunks": [{c: r[c] for c in CHUNK_COLUMNS} for r in rows],
        "vectors": np.array([r["vector"] for r in rows], dtype=np.float32),
        "documents": {
            k: replace(d, ingested_at=datetime(1970, 1, 1, tzinfo=UTC)) for k, d in store.documents().items()
        },
    }


@pytest.fixture(scope="module")
def by_threads(folder, tmp_path_factory) -> dict:
    db = tmp_path_factory.mktemp("threads") / "db"
    ingested(settings_for(folder, db, "threads"))
    return stored(str(db))


def assert_same_store(dask_db: Path, by_threads: dict) -> None:
    on_dask = stored(str(dask_db))
    assert on_dask["chunks"] == by_threads["chunks"] and len(on_dask["chunks"]) > 10
    assert on_dask["documents"] == by_threads["documents"] and len(on_dask["documents"]) == 3
    # Same model, same texts: vectors agree up to the float summation order of their batches, which take the
    # documents ready when the model is free (flows/stream.py), so padding differs between runs.
    cosines = np.sum(on_dask["vectors"] * by_threads["vectors"], axis=1) / (
        np.linalg.norm(on_dask["vectors"], axis=1) * np.linalg.norm(by_threads["vectors"], axis=1)
    )
    assert cosines.min() >= 0.9999, cosines.min()


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """Two worker processes of one thread, as an operator would start them for citesum (non-daemonic:
    extraction starts a child per document)."""
    with dask.config.set({"distributed.worker.daemon": False}):
        cluster = LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, death_timeout=WAIT
        )
    try:
        yield cluster
    finally:
        cluster.close(timeout=WAIT)


def loads_per_worker(client: Client) -> dict[int, int]:
    workers = list(client.scheduler_info()["workers"])
    # (process id, models that process loaded). The probes are functions of the standard library and of citesum:
    # the workers import the installed citesum, not this test module (pytest's importlib mode keeps tests/ off
    # their sys.path).
    on = {"allow_other_workers": False, "pure": False}
    pids = [client.submit(os.getpid, workers=[w], **on) for w in workers]
    caches = [client.submit(load_embedder.cache_info, workers=[w], **on) for w in workers]
    return {p.result(timeout=WAIT): c.result(timeout=WAIT).misses for p, c in zip(pids, caches, strict=True)}


def task_run_states(flow_run_id: UUID, name: str) -> list[str]:
    """States of a flow run's task runs of one task, as the test's Prefect API recorded them."""
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return [r.state.type.value for r in runs if r.name.startswith(f"{name} ")]  # "write agreement.pdf"


def test_worker_processes_store_what_threads_store_and_load_the_model_once(cluster, by_threads, folder, tmp_path):
    host, port = cluster.scheduler_address.removeprefix("tcp://").rsplit(":", 1)
    state = ingested(settings_for(folder, tmp_path / "db", f"dask://{host}:{port}"))

    assert_same_store(tmp_path / "db", by_threads)
    with Client(cluster.scheduler_address, timeout=WAIT, set_as_default=False) as client:
        loads = loads_per_worker(client)
    assert len(loads) == 2 and os.getpid() not in loads
    # Every chunk, embed and write task gets the model as an input: a worker that ran any loaded it,
    # once (zero would mean the model itself was pickled, more that it was loaded per task).
    assert sorted(loads.values()) == [1, 1], loads
    # The writes took the citesum-writer slot (strict: a limit the worker's API lacks fails the write)
    # and were recorded by the test's own Prefect API: the workers reached it.
    assert_writes_completed(state.state_details.flow_run_id)


def assert_writes_completed(flow_run_id: UUID) -> None:
    """Every write run completed: one to three of them, a write taking every document embedded meanwhile."""
    states = task_run_states(flow_run_id, "write")
    assert 1 <= len(states) <= 3 and set(states) == {"COMPLETED"}, states


def test_temporary_local_cluster_stores_what_threads_store(by_threads, folder, tmp_path):
    state = ingested(settings_for(folder, tmp_path / "db", "dask"))
    assert_same_store(tmp_path / "db", by_threads)
    assert_writes_completed(state.state_details.flow_run_id)


def test_runner_settings_become_task_runners():
    # A thread each for the 3 documents being prepared, the embedding and the writing.
    assert task_runner_for(Settings(workers=3)) == ThreadPoolTaskRunner(max_workers=5)
    assert task_runner_for(Settings(workers=3, runner="dask")) == DaskTaskRunner(
        cluster_kwargs={"n_workers": 3, "processes": True, "threads_per_worker": 1}
    )
    assert task_runner_for(Settings(runner="dask://scheduler.internal:8786")) == DaskTaskRunner(
        address="tcp://scheduler.internal:8786"
    )
    assert task_runner_for(Settings(runner="dask://[::1]:8786")) == DaskTaskRunner(address="tcp://[::1]:8786")


@pytest.mark.parametrize(
    "runner", ["ray", "dask:", "dask://host", "dask://host:port", "tcp://host:8786", "dask://h:1/x"]
)
def test_an_unusable_runner_is_a_configuration_error_naming_it(runner):
    with pytest.raises(ConfigurationError, match=f"runner '{runner}'"):
        task_runner_for(Settings(runner=runner))


def test_cli_refuses_an_unusable_runner_with_exit_2(tmp_path):
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.7")  # a folder with a PDF: the runner is what is refused
    result = CliRunner().invoke(app, ["ingest", str(tmp_path), "--db", str(tmp_path / "db"), "--runner", "ray"])
    assert result.exit_code == 2 and "'ray'" in result.output


def test_model_and_store_pickle_as_handles(tmp_path):
    embedder = load_embedder(DEFAULT_EMBED_MODEL, 32)
    data = pickle.dumps(embedder)
    assert len(data) < 1_000  # a name and a batch size, not the weights
    assert pickle.loads(data) is embedder  # the process's loaded model, not a second load
    store = LanceStore.open_or_create(str(tmp_path / "db"), "some-model", 8)
    copy = pickle.loads(pickle.dumps(store))
    assert copy.uri == store.uri and copy.documents() == {}
