"""The writer slot: every store write holds the Prefect global concurrency limit ``citesum-writer``.

One slot serializes ingestion, deletion and maintenance across runs and processes, so compaction never
races a commit. A slot taken by a run that was killed must come back, or every later write waits forever:

- With a lasting server (``PREFECT_API_URL`` set), the slot is leased for ``lease_seconds`` and renewed by
  the holder while it lives; the server takes a dead holder's slot back when the lease runs out.
- Prefect's temporary server keeps leases in memory and does not run the service that revokes them: a
  killed run's slot stays taken in the database the next temporary server opens (crash-safety benchmark,
  README). Every citesum process on a temporary server holds a shared ``flock`` on a file beside that
  database for as long as it lives; the kernel drops it with the process, even on SIGKILL. A process that
  can take the lock exclusively is the only citesum process alive, so any slot still taken was leaked,
  and it frees it.

Waiting for the slot is bounded by ``wait_seconds``: a slot held longer fails the write with
``WriterBusyError``, naming the limit and how to free it, instead of hanging the run.

A task takes the slot once the server has recorded its start (``start_recorded``): the server records it as
the task begins, and on SQLite an update of the slot racing that record fails ("database is locked"); the server
answers 503 and Prefect's client waits 2 s to ask again. That was nearly every write of a run, and the run's last
write and index refresh are on its critical path (README, How ingestion works).
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from prefect import get_client, get_run_logger
from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
from prefect.client.schemas.objects import StateType
from prefect.concurrency.sync import concurrency
from prefect.context import TaskRunContext
from prefect.exceptions import MissingContextError, ObjectAlreadyExists, ObjectNotFound
from prefect.settings import get_current_settings

from citesum.tasks.errors import CitesumError
from citesum.tasks.settings import Settings

WRITER_LIMIT = "citesum-writer"
RESET_COMMAND = f"prefect gcl update {WRITER_LIMIT} --active-slots 0"
LIVE_LOCK = "citesum-live.lock"

# The shared lock this process holds while it lives (temporary server only); kept open, never closed.
_live_lock: int | None = None


class WriterBusyError(CitesumError):
    """The writer slot stayed taken past the wait limit (not retried: retrying waits as long again)."""


@dataclass(frozen=True)
class WriterSlot:
    """How a task takes the writer slot; built from the settings and passed to every task that writes."""

    wait_seconds: float
    lease_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> WriterSlot:
        return cls(settings.store.writer_wait_seconds, settings.store.writer_lease_seconds)

    @contextmanager
    def hold(self, what: str) -> Iterator[None]:
        """Hold the slot for ``what`` (e.g. "writing report.pdf"), waiting at most ``wait_seconds`` for it."""
        start_recorded()
        acquired = False
        try:
            with concurrency(
                WRITER_LIMIT,
                occupy=1,
                strict=True,
                timeout_seconds=self.wait_seconds,
                lease_duration=self.lease_seconds,
            ):
                acquired = True
                yield
        except TimeoutError as exc:
            if acquired:  # a time limit inside the write itself, not the wait for the slot
                raise
            raise WriterBusyError(
                f"{what}: the {WRITER_LIMIT} slot stayed taken for {self.wait_seconds:.0f} s. Another run may be "
                f"writing (see running flows in the Prefect UI); if none is, a killed run left it taken: "
                f"`{RESET_COMMAND}`"
            ) from exc


def start_recorded(timeout: float = 1.0, every: float = 0.01) -> None:
    """Return once the server shows the current task run as running, or after ``timeout`` seconds (a server slow to
    record it: the slot is then taken anyway, and only a 503's wait is risked). Outside a task, at once."""
    context = TaskRunContext.get()
    if context is None:
        return
    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            try:
                if client.read_task_run(context.task_run.id).state_type == StateType.RUNNING:
                    return
            except ObjectNotFound:  # its first state not recorded yet
                pass
            time.sleep(every)


def ensure_writer_limit() -> int:
    """Create the limit if missing (a limit that does not exist is skipped with only a warning), and on a
    temporary server free a slot no living citesum process can hold. Returns the slots freed."""
    with get_client(sync_client=True) as client:
        try:
            client.upsert_global_concurrency_limit_by_name(WRITER_LIMIT, 1)
        except ObjectAlreadyExists:  # another run created it at the same moment
            pass
        if not on_temporary_server():
            return 0
        with registered_as_live() as alone:
            taken = client.read_global_concurrency_limit_by_name(WRITER_LIMIT).active_slots if alone else 0
            if taken:
                client.update_global_concurrency_limit(WRITER_LIMIT, GlobalConcurrencyLimitUpdate(active_slots=0))
                logger().warning("freed %d %s slot(s) left taken by a citesum run that was killed", taken, WRITER_LIMIT)
        return taken


def logger() -> logging.Logger | logging.LoggerAdapter:
    """The run's logger inside a flow (so the UI shows it), this module's outside one."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def on_temporary_server() -> bool:
    return get_current_settings().api.url is None


@contextmanager
def registered_as_live() -> Iterator[bool]:
    """Yield whether no other citesum process uses this Prefect home, then stay registered as living.

    While this yields True the lock is exclusive: a process starting meanwhile waits, so it cannot take a
    slot that is about to be freed. A process registered by an earlier run yields False: it may itself hold
    the slot in another thread.
    """
    global _live_lock
    if _live_lock is not None:
        yield False
        return
    path = Path(get_current_settings().home).expanduser() / LIVE_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        alone = True
    except BlockingIOError:
        alone = False
    try:
        yield alone
    finally:
        fcntl.flock(fd, fcntl.LOCK_SH)  # an exclusive lock is converted; otherwise wait for the holder's turn
        _live_lock = fd
