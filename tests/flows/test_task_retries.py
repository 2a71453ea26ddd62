"""Prefect retries a task that raised a TransientError, and only then: the real embed task, its store passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from prefect import flow, get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

from citesum.tasks.errors import ConfigurationError, TransientError
from citesum.tasks.ingest.plan import WorkItem
from citesum.tasks.ingest.sources import source_for
from citesum.tasks.ingest.tasks import Job, chunk, embed, extract
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore


@dataclass
class FailingFirst:
    """The store, except that its first ``reusable_vectors`` call raises ``error`` (a commit conflict, say)."""

    store: LanceStore
    error: Exception
    calls: list[str] = field(default_factory=list)

    def reusable_vectors(self, document_ids, versions):
        self.calls.append("reusable_vectors")
        if len(self.calls) == 1:
            raise self.error
        return self.store.reusable_vectors(document_ids, versions)


@pytest.fixture
def embed_one(tmp_path, sample, embedder):
    """A flow running the real extract, chunk and embed tasks on one PDF, with the given store."""
    sample.scanned_memo(tmp_path / "corpus" / "memo.pdf")
    settings = Settings(corpus=tmp_path / "corpus", db=str(tmp_path / "db"), ocr=False)
    source = source_for(tmp_path / "corpus" / "memo.pdf", tmp_path / "corpus")

    def run(store):
        @flow(name="embed-one")
        def embed_one_flow():
            job = extract(Job(WorkItem(source, "new")), settings, None)
            return embed([chunk(job, settings, embedder)], embedder, store)

        state = embed_one_flow(return_state=True)
        with get_client(sync_client=True) as client:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
            )
        (embed_run,) = [r for r in runs if r.name.split(" ", 1)[0] == "embed"]
        return state, embed_run

    return run, lambda: LanceStore.open_or_create(settings.store.db, embedder.name, embedder.dimension)


def test_a_transient_error_is_retried_by_prefect_and_the_flow_completes(embed_one):
    run, new_store = embed_one
    store = FailingFirst(new_store(), TransientError("commit conflict", source="memo.pdf"))
    state, embed_run = run(store)
    assert state.is_completed(), state
    assert store.calls == ["reusable_vectors"] * 2
    assert embed_run.run_count == 2 and embed_run.state.is_completed()
    (job,) = state.result()
    assert job.embedded == len(job.chunked.chunks) > 0


def test_an_error_that_is_not_transient_is_not_retried(embed_one):
    run, new_store = embed_one
    store = FailingFirst(new_store(), ConfigurationError("the store holds vectors of another model"))
    state, embed_run = run(store)
    assert state.is_failed()
    assert store.calls == ["reusable_vectors"]
    assert embed_run.run_count == 1 and embed_run.state.is_failed()
