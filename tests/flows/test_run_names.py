"""What a person sees on the Prefect server: task runs named after what they handled, one summary line each.

Read back through the Prefect client, as the UI reads them: run names from the task runs, lines from the logs.
"""

from __future__ import annotations

import re
import socket
import time

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId
from prefect.logging.handlers import APILogWorker

from citesum.flows.ingest import run_ingest
from citesum.flows.maintain import run_maintain
from citesum.flows.summarize import run_summarize
from citesum.tasks.settings import Settings

QUESTION = "What are the termination obligations?"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, sample):
    """The sample corpus ingested, summarized and maintained once; each flow's final state by name."""
    root = tmp_path_factory.mktemp("names")
    placed = sample.write_sample_corpus(root / "corpus")
    settings = Settings(
        corpus=root / "corpus", db=str(root / "db"), runs_dir=root / "runs", ollama_host=closed_port_url()
    )
    states = {
        "ingest": run_ingest(None, settings),
        "summarize": run_summarize(QUESTION, None, "query", "extractive", settings),
        "maintain": run_maintain(settings),
    }
    assert all(state.is_completed() for state in states.values()), states
    return settings, sorted(placed), states


def task_runs(state, expected: int, until=lambda names: True) -> dict[str, list[str]]:
    """Each task run name and the lines its runs logged, once the server holds at least ``expected`` task runs
    and ``until`` holds of their names.

    Task runs reach the server as events, recorded by one of its services a moment after the flow ends.
    """
    flow_run = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
    APILogWorker.drain_all(timeout=30)  # blocks until the logs logged so far are sent
    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while len(found := client.read_task_runs(flow_run_filter=flow_run)) < expected or not until(
            [r.name for r in found]
        ):
            assert time.monotonic() < deadline, [r.name for r in found]
            time.sleep(0.5)
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    name_of = {run.id: run.name for run in found}
    named: dict[str, list[str]] = {run.name: [] for run in found}
    for log in logs:
        if log.task_run_id in name_of:
            named[name_of[log.task_run_id]].append(log.message)
    return named


def the_line(lines: list[str], pattern: str) -> str:
    """The one logged line matching ``pattern`` (Prefect's own "Finished in state" lines aside)."""
    (line,) = [line for line in lines if re.search(pattern, line)]
    return line


def documents_in_batches(names: list[str], step: str) -> int:
    """How many documents the runs of a batched step name: "embed a.pdf" is one, "write a.pdf and 2 more" three."""
    batches = [re.fullmatch(rf"{step} .+?(?: and (\d+) more)?", name) for name in names]
    return sum(1 + int(found[1] or 0) for found in batches if found)


def test_ingest_task_runs_name_their_document_and_log_what_they_did(runs):
    _, documents, states = runs
    named = task_runs(  # each document's extract and chunk; discover, delete-missing, refresh-indexes
        states["ingest"],
        expected=len(documents) * 2 + 3,
        until=lambda names: all(documents_in_batches(names, step) == len(documents) for step in ("embed", "write")),
    )
    # embedding and writing take several documents a run, named after the first: each document in one
    for step in ("embed", "write"):
        assert documents_in_batches(list(named), step) == len(documents), sorted(named)
    batched = {
        step: [line for name, lines in named.items() if name.startswith(f"{step} ") for line in lines]
        for step in ("embed", "write")
    }

    for document in documents:
        extract = the_line(named[f"extract {document}"], rf"^extracted {re.escape(document)}: \d+ pages")
        assert re.search(r", \d+ problems?\b.*, \d+\.\d\d s$", extract), extract
        chunk = the_line(named[f"chunk {document}"], r"^chunked ")
        assert re.search(rf"{re.escape(document)}: \d+ chunks\b.*, \d+\.\d\d s$", chunk), chunk
        embed = the_line(batched["embed"], rf"^embedded {re.escape(document)}: ")
        assert re.search(r": \d+ chunks, \d+ computed, \d+ reused, \d+\.\d\d s$", embed), embed
        write = the_line(batched["write"], rf"^wrote {re.escape(document)}: ")
        assert re.search(rf"{re.escape(document)}: \d+ chunks \(new\), \d+\.\d\d s$", write), write
    # the scanned memo's text came from OCR: the problem is named with its page
    assert re.search(r"\(ocr p\.\d+\)", the_line(named["extract scanned_memo.pdf"], r"^extracted "))
    assert not [name for name in named if re.fullmatch(r"[a-z-]+-[0-9a-f]{3}", name)], sorted(named)


def test_summarize_task_runs_name_their_query_and_log_counts(runs):
    settings, _, states = runs
    named = task_runs(states["summarize"], expected=3)

    retrieved = the_line(named[f"retrieve {QUESTION}"], r"candidates")
    found = re.fullmatch(r"(\d+) candidates \((\d+) by vector, (\d+) by text\), \d+\.\d\d s", retrieved)
    assert found and settings.summarize.evidence < int(found[1]) <= settings.summarize.candidates, retrieved
    assert int(found[2]) > 0 and int(found[3]) > 0, retrieved  # the question's words are in the agreement
    reranked = the_line(named[f"rerank {QUESTION}"], r"evidence")
    assert re.fullmatch(rf"{settings.summarize.evidence} evidence of {found[1]} candidates, \d+\.\d\d s", reranked), (
        reranked
    )
    written = the_line(named["synthesize Summary"], r"sentences")
    assert re.fullmatch(
        rf"[1-9]\d* sentences citing [1-9]\d* of {settings.summarize.evidence} evidence, 0 removed, \d+\.\d\d s",
        written,
    )


def test_maintenance_task_runs_name_the_store_and_log_rows_and_bytes(runs):
    settings, _, states = runs
    named = task_runs(states["maintain"], expected=4)  # describe-store before and after, plan-vector-index, compact

    store = settings.store.db
    assert set(named) == {f"describe-store {store}", f"plan-vector-index {store}", f"compact {store}"}, sorted(named)
    described = [line for line in named[f"describe-store {store}"] if " rows, " in line]  # one per run
    assert len(described) == 2, described
    for line in described:  # each table's rows, versions, fragments and size on disk
        assert re.search(r"\bdocuments: 3 rows, \d+ versions, \d+ fragments, [\d.,]+ [kM]B\b", line), line
        assert re.search(r"\bchunks: [1-9][\d,]* rows, \d+ versions, \d+ fragments, [\d.,]+ [kM]B\b", line), line
    assert the_line(named[f"plan-vector-index {store}"], r"^vector index: none \(.*below")
    assert the_line(named[f"compact {store}"], rf"^compacted {re.escape(store)}, .*, \d+\.\d\d s$")
