"""The upload watcher: completeness, atomic renames, the move into the corpus, dedupe by content."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pymupdf
import pytest

from citesum.deployments.watch import (
    STATE_FILE,
    Observation,
    Upload,
    Watcher,
    check_layout,
    final_name,
    is_complete,
    move_into,
    observe,
)
from citesum.tasks.errors import ConfigurationError


def pdf_bytes(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


class Clock:
    """A clock the test moves by hand: stability never waits on real time."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def setup(tmp_path):
    inbox, corpus = tmp_path / "inbox", tmp_path / "corpus"
    inbox.mkdir()
    announced: list[Upload] = []
    clock = Clock()

    def make(quiet_seconds: float = 60.0) -> Watcher:
        return Watcher(inbox, corpus, announced.append, quiet_seconds=quiet_seconds, clock=clock)

    return inbox, corpus, announced, clock, make


def polls(watcher: Watcher, clock: Clock, n: int, step: float = 2.0) -> list[Upload]:
    taken = []
    for _ in range(n):
        clock.now += step
        taken += watcher.poll()
    return taken


@pytest.mark.parametrize(
    ("name", "final"),
    [
        (".report.pdf.part", "report.pdf"),
        ("report.pdf.part", "report.pdf"),
        ("report.PDF.tmp", "report.PDF"),
        (".report.pdf.Ab12Cd", "report.pdf"),  # rsync
        (".report.pdf", "report.pdf"),
        ("report.pdf", None),  # a candidate itself
        ("report.pdfx", None),
        ("notes.txt", None),
        (".pdf", None),
    ],
)
def test_temporary_names(name, final):
    assert final_name(name) == final


def test_a_file_is_complete_once_unchanged_across_two_polls():
    first = observe({}, {"a.pdf": (100, 1)}, set(), set(), now=0.0)
    assert not is_complete(first["a.pdf"], 0.0, 60.0, lambda: True)
    second = observe(first, {"a.pdf": (100, 1)}, set(), set(), now=2.0)
    assert is_complete(second["a.pdf"], 2.0, 60.0, lambda: True)


def test_a_growing_file_is_never_complete():
    seen: dict[str, Observation] = {}
    for poll, size in enumerate(range(100, 1000, 100)):
        seen = observe(seen, {"a.pdf": (size, poll)}, set(), set(), now=float(poll))
        assert not is_complete(seen["a.pdf"], float(poll), 0.0, lambda: True)


def test_an_unchanged_file_without_a_pdf_end_waits_the_quiet_period():
    seen = observe({}, {"a.pdf": (100, 1)}, set(), set(), now=0.0)
    seen = observe(seen, {"a.pdf": (100, 1)}, set(), set(), now=2.0)
    assert not is_complete(seen["a.pdf"], 2.0, 60.0, lambda: False)  # maybe a stalled upload
    seen = observe(seen, {"a.pdf": (100, 1)}, set(), set(), now=60.0)
    assert is_complete(seen["a.pdf"], 60.0, 60.0, lambda: False)


def test_an_empty_file_is_never_complete():
    seen = observe({}, {"a.pdf": (0, 1)}, set(), set(), now=0.0)
    seen = observe(seen, {"a.pdf": (0, 1)}, set(), set(), now=999.0)
    assert not is_complete(seen["a.pdf"], 999.0, 0.0, lambda: True)


def test_a_file_renamed_in_from_its_temporary_name_is_complete_at_once():
    seen = observe({}, {}, set(), {"sub/.a.pdf.part"}, now=0.0)
    seen = observe(seen, {"sub/a.pdf": (100, 1)}, {"sub/.a.pdf.part"}, set(), now=2.0)
    assert is_complete(seen["sub/a.pdf"], 2.0, 60.0, lambda: False)


def test_a_partial_upload_is_never_announced(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make()
    data = pdf_bytes("partial")
    target = inbox / "big.pdf"
    for end in range(1, len(data), len(data) // 5):  # written a piece per poll
        target.write_bytes(data[:end])
        assert polls(watcher, clock, 1) == []
    target.write_bytes(data[: len(data) // 2])  # then the upload stalls, half written
    assert polls(watcher, clock, 3) == []
    assert announced == [] and not corpus.exists()


def test_a_complete_upload_moves_into_the_corpus_at_its_relative_path(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make()
    (inbox / "contracts").mkdir()
    data = pdf_bytes("complete")
    (inbox / "contracts" / "deal.pdf").write_bytes(data)
    assert polls(watcher, clock, 1) == []  # seen once: not yet known to be finished
    [upload] = polls(watcher, clock, 1)
    assert upload.document_id == "contracts/deal.pdf" and upload.status == "announced"
    assert upload.path == corpus / "contracts" / "deal.pdf" and upload.path.read_bytes() == data
    assert not (inbox / "contracts" / "deal.pdf").exists()
    assert announced == [upload]
    assert polls(watcher, clock, 2) == []


def test_temporary_names_are_ignored_until_renamed(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make()
    temp = inbox / ".scan.pdf.part"
    temp.write_bytes(pdf_bytes("renamed"))
    assert polls(watcher, clock, 3) == []
    temp.rename(inbox / "scan.pdf")
    [upload] = polls(watcher, clock, 1)  # the rename says it is whole: no second poll needed
    assert upload.document_id == "scan.pdf"


def test_a_truncated_pdf_is_announced_after_the_quiet_period(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make(quiet_seconds=30.0)
    (inbox / "cut.pdf").write_bytes(pdf_bytes("cut")[:-200])
    assert polls(watcher, clock, 10, step=2.0) == []
    assert [u.document_id for u in polls(watcher, clock, 6, step=2.0)] == ["cut.pdf"]


def test_the_same_content_is_announced_once_even_after_a_restart(setup):
    inbox, corpus, announced, clock, make = setup
    data = pdf_bytes("twice")
    (inbox / "first.pdf").write_bytes(data)
    polls(make(), clock, 2)
    (inbox / "again.pdf").write_bytes(data)
    (inbox / "first.pdf").write_bytes(data)
    [dup_again, dup_first] = polls(make(), clock, 2)  # a new watcher reads the state file
    assert {dup_again.status, dup_first.status} == {"duplicate"}
    assert dup_again.path == corpus / "first.pdf"
    assert [u.document_id for u in announced] == ["first.pdf"]
    assert not (inbox / "again.pdf").exists() and not (corpus / "again.pdf").exists()
    assert (inbox / STATE_FILE).exists()


def test_content_is_announced_again_once_its_corpus_file_is_gone(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make()
    data = pdf_bytes("back")
    (inbox / "back.pdf").write_bytes(data)
    polls(watcher, clock, 2)
    (corpus / "back.pdf").unlink()
    (inbox / "back.pdf").write_bytes(data)
    assert [u.status for u in polls(watcher, clock, 2)] == ["announced"]
    assert len(announced) == 2


def test_changed_content_under_the_same_name_is_announced(setup):
    inbox, corpus, announced, clock, make = setup
    watcher = make()
    (inbox / "v.pdf").write_bytes(pdf_bytes("version one"))
    polls(watcher, clock, 2)
    second = pdf_bytes("version two")
    (inbox / "v.pdf").write_bytes(second)
    polls(watcher, clock, 2)
    assert [u.document_id for u in announced] == ["v.pdf", "v.pdf"]
    assert announced[0].sha256 != announced[1].sha256
    assert (corpus / "v.pdf").read_bytes() == second


def test_move_across_file_systems_appears_whole(tmp_path):
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs a second file system")
    with tempfile.TemporaryDirectory(dir=other) as folder:
        source = Path(folder) / "a.pdf"
        source.write_bytes(b"%PDF-1.7 ... %%EOF")
        move_into(source, tmp_path / "corpus" / "a.pdf")
    assert (tmp_path / "corpus" / "a.pdf").read_bytes() == b"%PDF-1.7 ... %%EOF"
    assert not source.exists() and [p.name for p in (tmp_path / "corpus").iterdir()] == ["a.pdf"]


@pytest.mark.parametrize(("inbox", "corpus"), [("c/inbox", "c"), ("i", "i/corpus"), ("same", "same")])
def test_inbox_and_corpus_must_not_overlap(tmp_path, inbox, corpus):
    with pytest.raises(ConfigurationError, match="must not contain"):
        check_layout(tmp_path / inbox, tmp_path / corpus)
    check_layout(tmp_path / "inbox", tmp_path / "corpus")
