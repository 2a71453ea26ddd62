"""How the ingestion flow moves documents through its steps: overlapping, not one step at a time.

Each document goes extract -> chunk -> embed -> write. While the model embeds, the next documents are
extracted (in their child processes) and chunked, and the documents embedded before are written: the steps
overlap instead of each waiting for every document. Embedding takes the chunked documents ready when the
model is free, up to ``GROUP_TEXTS`` texts, so its batches run full across document boundaries; writing takes
every embedded document ready when the last write ended, under one hold of the writer slot. Each document
still supersedes its old version in one commit of its own (``tasks.ingest.tasks.write``).

Measured on the 29 FinanceBench filings (README, Benchmark): one step at a time, 81 of the 214 s were
not embedding, 53 of them waiting for the writer slot again for each document.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.futures import PrefectFuture, as_completed

from citesum.tasks.ingest.report import DocumentOutcome, failed_outcome
from citesum.tasks.ingest.tasks import Job

Progress = Callable[[str, str, int, int], None]  # (step, document id, steps done, steps in all)
STEPS = ("extract", "chunk", "embed", "write")
# Texts an embedding pass takes at most (a document is never split): enough for full batches, few enough
# that the first writes start early and progress moves.
GROUP_TEXTS = 1024
# Documents chunked ahead of the embedding beyond the ``window`` being prepared: embedding is the slow step,
# and documents waiting for it hold their pages and chunks in memory.
AHEAD = 2
# The progress artifact is updated at most this often (and at the end): each update is a request the flow
# thread waits for between steps (12 ms on the temporary server), and was made for every document-step.
PROGRESS_SECONDS = 1.0


def progress_artifact() -> Callable[[float], None]:
    """A new progress artifact of the run at 0%, as a function that sets its percentage."""
    artifact = create_progress_artifact(0.0, key="citesum-ingest-progress", description="Ingestion progress")
    return lambda percent: update_progress_artifact(artifact, percent)


class StepTracker:
    """Keeps each step's failures and reports progress.

    Progress counts document-steps into an optional callback, each step, and a percentage into ``publish`` (the
    run's progress artifact), at most every ``every`` seconds and when the last step is done; a failed document
    counts its remaining steps as done.
    """

    def __init__(
        self,
        documents: int,
        on_progress: Progress | None,
        publish: Callable[[float], None],
        every: float = PROGRESS_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.done, self.on_progress = max(documents * len(STEPS), 1), 0, on_progress
        self.failures: list[DocumentOutcome] = []
        self.publish, self.every, self.clock = publish, every, clock
        self.published = clock()

    def settle(self, step: str, future: PrefectFuture, jobs: list[Job]) -> list | None:
        """The finished step's results (one per document for extract and chunk, a list for a batch); None
        when it failed, which fails each of its documents."""
        future.wait()  # as_completed may yield before the final state is recorded
        state = future.state
        if state.is_completed():
            result = future.result()
            for job in jobs:
                self.advance(step, job, steps=1)
            return result if isinstance(result, list) else [result]
        error = state.result(raise_on_failure=False)
        for job in jobs:
            self.failures.append(failed_outcome(job.item.source, error, step, job.seconds))
            self.advance(step, job, steps=len(STEPS) - STEPS.index(step))
        return None

    def advance(self, step: str, job: Job, steps: int) -> None:
        self.done += steps
        now = self.clock()
        if self.done >= self.total or now - self.published >= self.every:
            self.publish(100.0 * self.done / self.total)
            self.published = now
        if self.on_progress:
            self.on_progress(step, job.document_id, self.done, self.total)


Submit = Callable[[Job], PrefectFuture]
SubmitBatch = Callable[[list[Job]], PrefectFuture]


@dataclass
class Steps:
    """How each step is submitted to the run's task runner."""

    extract: Submit
    chunk: Submit
    embed: SubmitBatch
    write: SubmitBatch


@dataclass
class DocumentStream:
    """Documents through the steps, ``window`` of them extracting or chunking at a time (the task runner has a
    thread each for them, the embedding and the writing: ``flows.runners.task_runner_for``)."""

    steps: Steps
    tracker: StepTracker
    window: int
    group_texts: int = GROUP_TEXTS
    _running: dict[int, tuple[PrefectFuture, str, list[Job]]] = field(default_factory=dict)

    def run(self, jobs: list[Job]) -> list[DocumentOutcome]:
        """The write outcomes, in the order of ``jobs``; failed documents are in ``tracker.failures``."""
        # Smallest first: the model starts on a document prepared in a fraction of a second, and preparing
        # the larger ones stays ahead of embedding them.
        waiting = deque(sorted(jobs, key=lambda job: job.item.source.size))
        chunked, embedded, written = [], [], []
        while waiting or self._running or chunked or embedded:
            while (
                waiting and self._preparing() < self.window and self._preparing() + len(chunked) < self.window + AHEAD
            ):
                job = waiting.popleft()
                self._start("extract", self.steps.extract(job), [job])
            if chunked and not self._busy("embed"):
                group = take_group(chunked, self.group_texts)
                self._start("embed", self.steps.embed(group), group)
            if embedded and not self._busy("write"):
                self._start("write", self.steps.write(embedded), embedded)
                embedded = []
            future = next(as_completed([future for future, _, _ in self._running.values()]))
            _, step, group = self._running.pop(id(future))
            results = self.tracker.settle(step, future, group)
            if results is None:
                continue
            if step == "extract":
                self._start("chunk", self.steps.chunk(results[0]), results)
            else:
                {"chunk": chunked, "embed": embedded, "write": written}[step].extend(results)
        order = {job.document_id: i for i, job in enumerate(jobs)}
        return sorted(written, key=lambda outcome: order[outcome.document_id])

    def _start(self, step: str, future: PrefectFuture, jobs: list[Job]) -> None:
        self._running[id(future)] = (future, step, jobs)

    def _busy(self, step: str) -> bool:
        return any(running == step for _, running, _ in self._running.values())

    def _preparing(self) -> int:
        return sum(step in ("extract", "chunk") for _, step, _ in self._running.values())


def take_group(chunked: list[Job], texts: int) -> list[Job]:
    """The first chunked documents up to ``texts`` chunks in all (at least one), removed from ``chunked``."""
    count, total = 0, 0
    for job in chunked:
        if count and total + len(job.chunked.chunks) > texts:
            break
        count, total = count + 1, total + len(job.chunked.chunks)
    group = chunked[:count]
    del chunked[:count]
    return group
