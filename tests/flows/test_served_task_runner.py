"""A served or worker run of the ingest flow uses the runner and worker count of its settings.

`citesum serve` and a `prefect.yaml` worker load the flow from its module (the deployment's entrypoint), so
the run gets the task runner the flow is declared with; it must follow the run's CITESUM_* environment.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading

import cloudpickle
import pytest
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.flows import load_flow_from_entrypoint
from prefect.task_runners import ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner

from citesum.deployments.serve import build_deployments
from citesum.tasks.settings import Settings

MEETING = threading.Barrier(3)
WAIT = 60  # seconds for three tasks to be running at once; with fewer threads the third never starts


@pytest.fixture(autouse=True)
def served_environment(monkeypatch):
    """What `citesum serve` exports for its runs, here by hand: the runner settings."""
    monkeypatch.setenv("CITESUM_WORKERS", "3")
    monkeypatch.delenv("CITESUM_RUNNER", raising=False)
    monkeypatch.delenv("CITESUM_INGEST__RUNNER", raising=False)
    monkeypatch.delenv("CITESUM_INGEST__WORKERS", raising=False)
    MEETING.reset()


def served_ingest(name: str):
    """The ingest flow as the served deployment ``name`` loads it: from its entrypoint."""
    deployment = next(d for d in build_deployments(Settings()) if d.name == name)
    return load_flow_from_entrypoint(deployment.entrypoint)


def meet_the_others(_: int) -> int:
    MEETING.wait(WAIT)
    return threading.get_ident()


def where_it_runs(_: int) -> tuple[int, bool]:
    return os.getpid(), multiprocessing.current_process().daemon


meet = task(meet_the_others, cache_policy=NO_CACHE)
worker_process = task(where_it_runs, cache_policy=NO_CACHE)


@flow
def three_at_once() -> list[int]:
    return [f.result(timeout=WAIT) for f in meet.map(range(3))]


@flow
def one_on_a_worker() -> list[tuple[int, bool]]:
    return [f.result(timeout=WAIT) for f in worker_process.map(range(1))]


@pytest.mark.parametrize("deployment", ["reindex", "ingest-upload"])
def test_a_served_run_has_threads_for_its_workers_setting(deployment):
    runner = served_ingest(deployment).task_runner
    state = three_at_once.with_options(task_runner=runner)(return_state=True)
    assert state.is_completed(), state.result(raise_on_failure=False)
    assert len(set(state.result())) == 3  # three threads met at the barrier


def test_a_served_run_builds_the_dask_runner_its_settings_name(monkeypatch):
    monkeypatch.setenv("CITESUM_RUNNER", "dask")
    runner = served_ingest("reindex").task_runner
    assert runner.configured() == DaskTaskRunner(
        cluster_kwargs={"n_workers": 3, "processes": True, "threads_per_worker": 1}
    )
    monkeypatch.setenv("CITESUM_INGEST__RUNNER", "dask://scheduler.internal:8786")
    monkeypatch.delenv("CITESUM_RUNNER")
    assert runner.configured() == DaskTaskRunner(address="tcp://scheduler.internal:8786")
    monkeypatch.setenv("CITESUM_RUNNER", "threads")
    assert runner.configured() == ThreadPoolTaskRunner(max_workers=5)  # 3 workers, the embedding, the writing


def test_a_served_dask_run_starts_workers_that_may_spawn_extraction(monkeypatch, request):
    # Extraction starts a child per document, which a daemonic worker process may not.
    monkeypatch.setenv("CITESUM_RUNNER", "dask")
    monkeypatch.setenv("CITESUM_WORKERS", "1")
    runner = served_ingest("ingest-upload").task_runner
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Dask workers cannot import the tests package
    request.addfinalizer(lambda: cloudpickle.unregister_pickle_by_value(sys.modules[__name__]))
    state = one_on_a_worker.with_options(task_runner=runner)(return_state=True)
    assert state.is_completed(), state.result(raise_on_failure=False)
    [(pid, daemonic)] = state.result()
    assert pid != os.getpid() and not daemonic
