"""Where ingestion tasks run: threads in this process, or Dask worker processes (``settings.ingest.runner``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from citesum.flows.temporary_server import temporary_server_url
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import Settings
from citesum.tasks.store.writer import ensure_writer_limit


@contextmanager
def task_runner(settings: Settings) -> Iterator[TaskRunner]:
    """The configured task runner, with what its workers need in place while a flow runs on it."""
    runner = task_runner_for(settings)
    if settings.ingest.runner == "threads":
        yield runner
        return
    with dask_worker_environment():
        yield runner


class ConfiguredTaskRunner(TaskRunner):
    """The task runner the run's settings name, chosen as the run starts.

    `citesum serve` and a `prefect.yaml` worker load a flow from its module, so a run gets the task runner
    the flow is declared with, not one built from settings. This one builds ``task_runner_for(settings)``
    when the engine starts it (from ``Settings()``, the run's CITESUM_* environment, unless settings are
    given), with what its workers need (``task_runner``), and hands it every task.
    """

    def __init__(self, settings: Settings | None = None):
        super().__init__()
        self.settings = settings
        self._runner: TaskRunner | None = None
        self._stack = ExitStack()

    def duplicate(self) -> ConfiguredTaskRunner:
        return type(self)(self.settings)

    def configured(self) -> TaskRunner:
        """The runner a run started now would use (not started)."""
        return task_runner_for(self.settings or Settings())

    def __enter__(self) -> ConfiguredTaskRunner:
        with ExitStack() as stack:
            runner = stack.enter_context(task_runner(self.settings or Settings()))
            self._runner = stack.enter_context(runner)
            self._stack = stack.pop_all()
        return super().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stack.__exit__(*exc_info)
        finally:
            self._runner = None
            super().__exit__(*exc_info)

    def submit(self, task, parameters: dict[str, Any], wait_for: Iterable | None = None, dependencies=None):
        return self._delegate().submit(task, parameters, wait_for, dependencies)

    def map(self, task, parameters: dict[str, Any], wait_for: Iterable | None = None):
        return self._delegate().map(task, parameters, wait_for)

    def _delegate(self) -> TaskRunner:
        if self._runner is None:
            raise RuntimeError("The task runner must be started before submitting work.")
        return self._runner


def task_runner_for(settings: Settings) -> TaskRunner:
    """``settings.ingest.runner``: threads here, a temporary local Dask cluster, or an existing Dask scheduler."""
    if settings.ingest.runner == "threads":
        # The embedding and the writing each need a thread of their own beside the documents being prepared:
        # queued behind extractions, the model waited (2.7 s for the first pass on 10 filings).
        return ThreadPoolTaskRunner(max_workers=settings.ingest.workers + 2)
    address = None if settings.ingest.runner == "dask" else dask_address(settings.ingest.runner)
    # Imported here: distributed adds about half a second to every command that never uses it.
    from prefect_dask import DaskTaskRunner

    if address:
        return DaskTaskRunner(address=address)
    # One thread per worker process: torch and each extraction child use the cores already.
    return DaskTaskRunner(
        cluster_kwargs={"n_workers": settings.ingest.workers, "processes": True, "threads_per_worker": 1}
    )


def dask_address(runner: str) -> str:
    """'dask://HOST:PORT' as the scheduler address Dask connects to, 'tcp://HOST:PORT'."""
    parts = urlsplit(runner)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        port = None
    if parts.scheme != "dask" or not parts.hostname or port is None or parts.path or parts.query:
        raise ConfigurationError(f"runner {runner!r}: expected 'threads', 'dask' or 'dask://HOST:PORT'")
    return f"tcp://{parts.netloc}"


@contextmanager
def dask_worker_environment() -> Iterator[None]:
    """What Dask worker processes need to run ingestion tasks, while a flow runs.

    - Non-daemonic worker processes: extraction starts a child per document, and a daemonic process may not
      ("daemonic processes are not allowed to have children", every extract failed on a default LocalCluster).
      This covers the clusters started here; workers of an existing scheduler must be started that way.
    - One Prefect API: each task carries this process's Prefect settings to its worker. Without an API URL,
      every worker started a temporary server of its own (about 15 s each, leases in its own memory), so
      this process's temporary server is named instead; it listens on 127.0.0.1, for local workers only.
      Named, it looks like a lasting server to the flow's writer-slot check, so that check (register this
      process as live, free a slot a killed run left taken) runs first, as on a temporary server.
    """
    import dask

    with dask.config.set({"distributed.worker.daemon": False}):
        if get_current_settings().api.url is not None:
            yield
            return
        ensure_writer_limit()
        with temporary_settings({PREFECT_API_URL: temporary_server_url()}):
            yield
