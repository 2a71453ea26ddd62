"""Hostile input without the engine: undecodable names, special files, links out of the corpus, conflicts,
the OCR pixel cap, and the extraction child's page and memory limits (issue 10)."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pymupdf
import pytest

from citesum.deployments.watch import Upload, Watcher
from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest.names import path_text, text_path
from citesum.tasks.ingest.pdf.sandbox import extract_with_time_limit
from citesum.tasks.ingest.plan import plan_ingest
from citesum.tasks.ingest.sources import SourceError, discover_sources, hash_file, source_for
from citesum.tasks.records import DocumentRecord, SourceFile
from tests import hostile_cases

BAD_NAME = os.fsdecode(b"bad-\xff-name.pdf")  # a byte that is not UTF-8, as Linux file systems allow


def write_pdf(path: Path, text: str, pages: int = 1) -> Path:
    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"{text} page {n + 1}")
    path.write_bytes(doc.tobytes())  # MuPDF cannot take a name that is not UTF-8
    return path


@pytest.mark.parametrize(
    "name",
    [BAD_NAME, "plain.pdf", "50% off.pdf", "100%FF.pdf", "%25.pdf", os.fsdecode(b"%\xff%41\xfe.pdf"), "ü #x.pdf"],
)
def test_names_become_text_that_turns_back_into_the_same_name(name):
    text = path_text(name)
    text.encode("utf-8")  # no surrogate left: LanceDB, JSON and Prefect accept it
    assert text_path(text) == Path(name)


def test_ordinary_names_are_their_own_text():
    assert path_text("contracts/ü #x 50% off.pdf") == "contracts/ü #x 50% off.pdf"
    assert path_text(BAD_NAME) == "bad-%FF-name.pdf"


def test_an_undecodable_name_is_discovered_under_a_text_id(tmp_path):
    write_pdf(tmp_path / BAD_NAME, "bad name")
    [source] = discover_sources(tmp_path).sources
    assert source.document_id == "bad-%FF-name.pdf"
    json.dumps(source.path, ensure_ascii=False).encode("utf-8")
    assert text_path(source.path) == tmp_path / BAD_NAME


def test_special_files_are_rejected_without_blocking(tmp_path):
    write_pdf(tmp_path / "good.pdf", "good")
    os.mkfifo(tmp_path / "fifo.pdf")  # opening it for reading would wait for a writer forever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.pdf"))
    (tmp_path / "folder.pdf").mkdir()
    write_pdf(tmp_path / "folder.pdf" / "inner.pdf", "inner")
    try:
        found = discover_sources(tmp_path)
    finally:
        server.close()
    assert [s.document_id for s in found.sources] == ["folder.pdf/inner.pdf", "good.pdf"]
    assert {(r.document_id, r.kind) for r in found.rejected} == {
        ("fifo.pdf", "not_regular"),
        ("sock.pdf", "not_regular"),
    }
    assert not any(r.fails for r in found.rejected)
    with pytest.raises(SourceError, match="FIFO"):
        hash_file(tmp_path / "fifo.pdf")


def test_a_file_changing_while_hashed_is_refused(tmp_path):
    path = tmp_path / "growing.pdf"
    with open(path, "wb") as file:
        file.truncate(256 << 20)  # sparse: hashing it takes a while, writing it takes no room
    stop = threading.Event()

    def touch():
        ns = 1
        while not stop.is_set():
            os.utime(path, ns=(ns, ns))
            ns += 1

    toucher = threading.Thread(target=touch)
    toucher.start()
    try:
        with pytest.raises(SourceError, match="changed while it was read") as caught:
            hash_file(path)
    finally:
        stop.set()
        toucher.join()
    assert caught.value.kind == "changed_while_read"


def test_a_file_over_the_size_limit_fails_unread(tmp_path):
    write_pdf(tmp_path / "big.pdf", "big")
    write_pdf(tmp_path / "small.pdf", "s")
    limit = (tmp_path / "big.pdf").stat().st_size - 1
    (tmp_path / "small.pdf").write_bytes((tmp_path / "small.pdf").read_bytes()[:limit])
    found = discover_sources(tmp_path, max_bytes=limit)
    assert [s.document_id for s in found.sources] == ["small.pdf"]
    [rejected] = found.rejected
    assert (rejected.document_id, rejected.kind, rejected.fails) == ("big.pdf", "too_large", True)
    assert "CITESUM_MAX_FILE_BYTES" in rejected.message


def test_links_out_of_the_corpus_are_not_followed_unless_asked(tmp_path):
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    corpus.mkdir()
    outside.mkdir()
    write_pdf(outside / "secret.pdf", "secret")
    write_pdf(corpus / "good.pdf", "good")
    (corpus / "secret.pdf").symlink_to(outside / "secret.pdf")
    (corpus / "out").symlink_to(outside)
    (corpus / "inner.pdf").symlink_to(corpus / "good.pdf")  # stays inside: followed
    (corpus / "loop").symlink_to(corpus)
    (corpus / "dangling.pdf").symlink_to(tmp_path / "nothing.pdf")

    found = discover_sources(corpus)
    assert [s.document_id for s in found.sources] == ["good.pdf", "inner.pdf"]
    kinds = {r.document_id: r.kind for r in found.rejected}
    assert kinds == {
        "secret.pdf": "outside_corpus",
        "out": "outside_corpus",
        "loop": "symlink_loop",
        "dangling.pdf": "broken_link",
    }
    always = discover_sources(corpus, follow_symlinks="always")
    assert {s.document_id for s in always.sources} == {"good.pdf", "inner.pdf", "secret.pdf", "out/secret.pdf"}


def record(doc_id: str, version: str, source: str) -> DocumentRecord:
    return DocumentRecord(doc_id, version, source, pages=1, chunks=1, status="ok", settings="s1")


def test_an_id_held_by_another_file_that_still_exists_is_a_conflict():
    stored = {"msa.pdf": record("msa.pdf", "v1", "/corpus/msa.pdf")}
    other = SourceFile("msa.pdf", "/other/msa.pdf", "v2")
    plan = plan_ingest([other], stored, settings_fingerprint="s1", corpus_root=Path("/other"), exists=lambda p: True)
    assert plan.work == () and [c.held_by for c in plan.conflicts] == ["/corpus/msa.pdf"]
    assert "--replace" in plan.conflicts[0].message
    replaced = plan_ingest(
        [other], stored, settings_fingerprint="s1", corpus_root=None, replace_conflicts=True, exists=lambda p: True
    )
    assert [w.status for w in replaced.work] == ["updated"] and replaced.conflicts == ()
    moved = plan_ingest([other], stored, settings_fingerprint="s1", corpus_root=None, exists=lambda p: False)
    assert [w.status for w in moved.work] == ["updated"]  # the old file is gone: the corpus moved


def test_an_unreadable_file_is_never_deleted_from_the_store():
    stored = {"locked.pdf": record("locked.pdf", "v1", "/corpus/locked.pdf")}
    plan = plan_ingest([], stored, settings_fingerprint="s1", corpus_root=Path("/corpus"), held=["locked.pdf"])
    assert plan.deletions == ()


@pytest.fixture
def open_folder():
    """A folder the unprivileged user may enter (pytest's tmp_path lies under a folder only its owner may)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="citesum-perm-"))
    folder.chmod(0o755)
    yield folder
    for path in folder.rglob("*"):
        path.chmod(0o755)
    shutil.rmtree(folder)


def _discover_as_nobody(root: Path, sent) -> None:
    """In a forked child: drop to the unprivileged user (root reads anything), then discover."""
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    found = discover_sources(root)
    sent.send(([s.document_id for s in found.sources], [(r.document_id, r.kind, r.message) for r in found.rejected]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork to drop privileges in a child")
def test_files_and_folders_that_cannot_be_read_are_reported_and_the_rest_discovered(open_folder):
    import multiprocessing

    corpus = open_folder / "corpus"
    (corpus / "closed").mkdir(parents=True)
    write_pdf(corpus / "open.pdf", "readable")
    write_pdf(corpus / "locked.pdf", "not readable").chmod(0o000)
    write_pdf(corpus / "closed" / "inside.pdf", "in a folder that cannot be listed")
    (corpus / "closed").chmod(0o000)
    if os.geteuid() != 0:
        pytest.skip("the child drops to uid 65534, which needs root; as another user chmod 000 already denies")
    context = multiprocessing.get_context("fork")  # the child runs the loaded interpreter: no exec as nobody
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_discover_as_nobody, args=(corpus, sending))
    child.start()
    sending.close()  # only the child's end is open: recv raises EOFError if it died without sending
    assert receiving.poll(60), "the unprivileged child sent nothing"
    sources, rejected = receiving.recv()
    child.join(30)
    assert sources == ["open.pdf"]
    assert [(d, k) for d, k, _ in rejected] == [("closed", "unreadable"), ("locked.pdf", "unreadable")]
    assert all("Permission denied" in message for _, _, message in rejected)


def giant_pdf(path: Path) -> Path:
    path.write_bytes(hostile_cases.giant_image_page())
    return path


def test_a_giant_page_is_ocred_within_the_pixel_cap_and_reported(tmp_path):
    source = source_for(giant_pdf(tmp_path / "giant.pdf"), tmp_path)
    document = extract_with_time_limit(source, timeout=120, memory_mb=1024, ocr_max_pixels=4_000_000)
    [problem] = document.problems
    assert problem.page == 1 and "pixel cap" in problem.message and "dpi" in problem.message


def test_a_document_past_the_memory_limit_fails_with_its_kind(tmp_path):
    source = source_for(giant_pdf(tmp_path / "giant.pdf"), tmp_path)
    # 300 dpi over the whole page without a cap that binds: far past the 512 MiB the child may use
    with pytest.raises(DocumentError) as caught:
        extract_with_time_limit(source, timeout=120, memory_mb=512, ocr_max_pixels=10**12)
    assert caught.value.kind == "memory_limit" and "512 MiB" in caught.value.message


def test_a_document_over_the_page_limit_fails(tmp_path):
    source = source_for(write_pdf(tmp_path / "long.pdf", "long", pages=5), tmp_path)
    with pytest.raises(DocumentError) as caught:
        extract_with_time_limit(source, timeout=60, max_pages=4)
    assert caught.value.kind == "too_many_pages" and "CITESUM_MAX_PAGES" in caught.value.message
    assert len(extract_with_time_limit(source, timeout=60, max_pages=5).pages) == 5


def test_watch_leaves_links_and_fifos_and_reports_them_once(tmp_path):
    inbox, corpus, outside = tmp_path / "inbox", tmp_path / "corpus", tmp_path / "outside"
    for folder in (inbox, outside):
        folder.mkdir()
    write_pdf(outside / "secret.pdf", "secret")
    (inbox / "planted.pdf").symlink_to(outside / "secret.pdf")
    os.mkfifo(inbox / "pipe.pdf")
    write_pdf(inbox / BAD_NAME, "bad name upload")
    announced: list[Upload] = []
    watcher = Watcher(inbox, corpus, announced.append, quiet_seconds=0)
    first, second, third = watcher.poll(), watcher.poll(), watcher.poll()
    assert sorted((u.document_id, u.status) for u in first) == [("pipe.pdf", "refused"), ("planted.pdf", "refused")]
    assert [(u.document_id, u.status) for u in second] == [("bad-%FF-name.pdf", "announced")]
    assert third == []
    assert [u.document_id for u in announced] == ["bad-%FF-name.pdf"]
    assert (inbox / "planted.pdf").is_symlink() and (inbox / "pipe.pdf").exists()
    assert not (corpus / "planted.pdf").exists() and not (corpus / "pipe.pdf").exists()
    assert (corpus / BAD_NAME).is_file()
