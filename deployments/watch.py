"""The upload watcher: complete PDFs in the inbox move into the corpus and are announced once.

A file is complete when its size and mtime are unchanged across two polls, or at once when it
appears by an atomic rename from a temporary name (``.x.pdf.part``, ``x.pdf.tmp``, rsync's
``.x.pdf.Ab12Cd``). Temporary and hidden names are never taken. An unchanged file that does not
end like a PDF waits ``quiet_seconds`` more: a stalled upload also looks unchanged for a while.

A complete upload keeps its path relative to the inbox inside the corpus, so its document id is
that path and stays the same when the nightly reindex sees it. It is moved before it is announced:
an announcement that is lost leaves the file in the corpus for the next reindex. Content whose
sha256 was announced before (and whose corpus file is still there) is a duplicate: it is removed
from the inbox and not announced again.

Only regular files are taken: a symbolic link (it could point at any file the service can read),
a FIFO, a socket or a device named ``*.pdf`` is reported once and left where it is. Names are
turned into text with ``names.path_text`` (an undecodable byte as ``%XX``), as ingestion does.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.names import path_text, text_path
from citesum.tasks.ingest.sources import SourceError, file_type, hash_file, open_regular

EVENT = "citesum.document.uploaded"
STATE_FILE = ".citesum-announced.json"  # hidden: never taken for an upload
PDF_END_MARKER = b"%%EOF"
TAIL_BYTES = 1024  # readers accept %%EOF within the last KiB


@dataclass(frozen=True)
class Observation:
    """What the watcher knows about one candidate file between polls."""

    size: int
    mtime_ns: int
    since: float  # clock reading when this size and mtime were first seen
    polls: int = 1  # consecutive polls that saw this size and mtime
    renamed_in: bool = False  # appeared as a temporary upload of the same name vanished


@dataclass(frozen=True)
class Upload:
    """One file taken from the inbox. ``status``: ``announced``, ``duplicate``, or ``refused`` (not a
    regular file: left in the inbox, ``note`` says why)."""

    document_id: str  # path relative to the inbox, and so to the corpus, as text
    path: Path  # where it now lives in the corpus (for a duplicate: the earlier copy; refused: in the inbox)
    sha256: str
    status: str
    note: str = ""


Stat = tuple[int, int]  # (size, mtime_ns)


def final_name(name: str) -> str | None:
    """The PDF name a temporary upload name stands for, or None if it is not one.

    ``.x.pdf.part``, ``x.pdf.tmp``, ``.x.pdf.Ab12Cd`` and ``.x.pdf`` stand for ``x.pdf``.
    """
    at = name.lower().rfind(".pdf")
    if at <= 0:
        return None
    stem, rest = name[: at + 4], name[at + 4 :]
    if rest and not rest.startswith("."):
        return None
    if not rest and not stem.startswith("."):
        return None  # a plain x.pdf is a candidate, not a temporary name
    return stem.removeprefix(".") or None


def is_candidate(name: str) -> bool:
    return name.lower().endswith(".pdf") and not name.startswith(".")


def observe(
    previous: dict[str, Observation],
    stats: dict[str, Stat],
    temps_before: set[str],
    temps_now: set[str],
    now: float,
) -> dict[str, Observation]:
    """The next observations from one poll's stats; files that are gone are dropped."""
    vanished = {final for t in temps_before - temps_now if (final := temp_target(t))}
    observed = {}
    for path, (size, mtime_ns) in stats.items():
        seen = previous.get(path)
        if seen is not None and (seen.size, seen.mtime_ns) == (size, mtime_ns):
            observed[path] = replace(seen, polls=seen.polls + 1)
        else:  # new, or still being written: start over
            observed[path] = Observation(size, mtime_ns, since=now, renamed_in=path in vanished)
    return observed


def temp_target(temp_path: str) -> str | None:
    """The candidate path (relative, posix) a temporary upload path stands for."""
    parent, _, name = temp_path.rpartition("/")
    final = final_name(name)
    return None if final is None else f"{parent}/{final}" if parent else final


def is_complete(seen: Observation, now: float, quiet_seconds: float, ends_like_pdf: Callable[[], bool]) -> bool:
    """Whether an upload is finished; ``ends_like_pdf`` is only read for an unchanged file."""
    if seen.size == 0:
        return False
    if seen.renamed_in:
        return True
    if seen.polls < 2:
        return False
    return now - seen.since >= quiet_seconds or ends_like_pdf()


def ends_like_pdf(path: Path) -> bool:
    try:
        with open(open_regular(path, follow=False), "rb") as file:
            file.seek(max(0, os.fstat(file.fileno()).st_size - TAIL_BYTES))
            return PDF_END_MARKER in file.read()
    except OSError:  # gone since the scan, or no longer a regular file: looked at again on the next poll
        return False


def scan(inbox: Path) -> tuple[dict[str, Stat], set[str], dict[str, str]]:
    """Candidate PDFs with their (size, mtime_ns), temporary upload names, and PDF names that are not
    regular files (with what they are), relative to the inbox.

    Hidden folders are skipped: they hold other tools' state, and the state file lives at the top.
    Links are never followed (``lstat``): a link to a folder is not walked, a link named x.pdf is refused.
    """
    stats: dict[str, Stat] = {}
    temps: set[str] = set()
    refused: dict[str, str] = {}
    for folder, dirs, files in os.walk(inbox):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        relative = Path(folder).relative_to(inbox)
        for name in files:
            key = (relative / name).as_posix()
            if is_candidate(name):
                try:
                    st = os.lstat(Path(folder, name))
                except FileNotFoundError:  # renamed or removed since the listing
                    continue
                if stat.S_ISREG(st.st_mode):
                    stats[key] = (st.st_size, st.st_mtime_ns)
                else:
                    refused[key] = file_type(st.st_mode)
            elif final_name(name) is not None:
                temps.add(key)
    return stats, temps, refused


class AnnouncedLog:
    """sha256 -> document id of every upload announced, in a small JSON file."""

    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, str] = json.loads(path.read_text())["announced"] if path.exists() else {}

    def earlier(self, sha256: str, corpus: Path) -> Path | None:
        """The corpus file this content was announced as, if it is still there to be ingested."""
        document_id = self.entries.get(sha256)
        return corpus / text_path(document_id) if document_id and (corpus / text_path(document_id)).is_file() else None

    def add(self, sha256: str, document_id: str) -> None:
        self.entries[sha256] = document_id
        temp = self.path.with_name(self.path.name + ".part")
        temp.write_text(json.dumps({"announced": self.entries}, indent=1, sort_keys=True))
        os.replace(temp, self.path)  # a crash mid-write never leaves half a state file


def move_into(source: Path, target: Path) -> None:
    """Move a file so that ``target`` appears whole: a rename, or across file systems a copy to a
    hidden temporary name (never discovered as a PDF) renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        temp = target.with_name(f".{target.name}.part")
        shutil.copy2(source, temp)
        os.replace(temp, target)
        source.unlink()


class Watcher:
    """Polls an inbox; each poll moves complete uploads into the corpus and announces them."""

    def __init__(
        self,
        inbox: Path,
        corpus: Path,
        announce: Callable[[Upload], None],
        *,
        quiet_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.inbox, self.corpus = inbox.absolute(), corpus.absolute()
        self.announce, self.quiet_seconds, self.clock = announce, quiet_seconds, clock
        self.announced = AnnouncedLog(self.inbox / STATE_FILE)
        self.observations: dict[str, Observation] = {}
        self.temps: set[str] = set()
        self.refused: dict[str, str] = {}  # reported once, while they stay

    def poll(self) -> list[Upload]:
        stats, temps, refused = scan(self.inbox)
        now = self.clock()
        self.observations = observe(self.observations, stats, self.temps, temps, now)
        self.temps = temps
        news = {key: what for key, what in sorted(refused.items()) if self.refused.get(key) != what}
        self.refused = refused
        ready = [
            key
            for key, seen in sorted(self.observations.items())
            if is_complete(seen, now, self.quiet_seconds, lambda key=key: ends_like_pdf(self.inbox / key))
        ]
        taken = [upload for key in ready if (upload := self.take(key))]
        return [self.refusal(key, what) for key, what in news.items()] + taken

    def refusal(self, key: str, what: str) -> Upload:
        note = f"{what}, not a regular file: left in the inbox, not announced"
        return Upload(path_text(key), Path(path_text(self.inbox / key)), "", "refused", note)

    def take(self, key: str) -> Upload | None:
        """Move one complete upload into the corpus and announce it, or drop it as a duplicate."""
        source, seen = self.inbox / key, self.observations.pop(key)
        try:
            sha256 = hash_file(source, follow=False)
        except SourceError as exc:  # swapped for a link or a FIFO since the scan
            if exc.kind != "not_regular":
                return None  # written to while hashing: observed afresh on the next poll
            what = what_is(source)
            self.refused[key] = what
            return self.refusal(key, what)
        except FileNotFoundError:
            return None
        if stat_of(source) != (seen.size, seen.mtime_ns):
            return None  # written to while hashing: observed afresh on the next poll
        document_id = path_text(key)
        if earlier := self.announced.earlier(sha256, self.corpus):
            source.unlink()  # the same bytes are already in the corpus
            return Upload(document_id, earlier, sha256, "duplicate")
        target = self.corpus / key
        move_into(source, target)
        upload = Upload(document_id, target, sha256, "announced")
        self.announce(upload)
        self.announced.add(sha256, document_id)
        return upload


def what_is(path: Path) -> str:
    try:
        return file_type(os.lstat(path).st_mode)
    except OSError:
        return "gone"


def stat_of(path: Path) -> Stat | None:
    """(size, mtime_ns) of a regular file, never through a link; None for anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def run(watcher: Watcher, poll_seconds: float, stop: threading.Event, report: Callable[[Upload], None]) -> None:
    """Poll until ``stop`` is set; waiting on the event lets a signal end the wait at once."""
    while not stop.is_set():
        for upload in watcher.poll():
            report(upload)
        stop.wait(poll_seconds)


def check_layout(inbox: Path, corpus: Path) -> None:
    """The inbox must not overlap the corpus: a reindex would take half-written uploads."""
    inbox, corpus = inbox.resolve(), corpus.resolve()
    if inbox == corpus or inbox.is_relative_to(corpus) or corpus.is_relative_to(inbox):
        raise ConfigurationError(f"the inbox {inbox} and the corpus {corpus} must not contain one another")


def emit_uploaded(upload: Upload) -> None:
    """Announce an upload to the Prefect API; the ``ingest-upload`` deployment's trigger reads
    ``event.payload.path``. Events are sent in the background and flushed at interpreter exit."""
    from prefect.events import emit_event

    emit_event(
        event=EVENT,
        resource={
            "prefect.resource.id": f"citesum.document.{upload.sha256}",
            "prefect.resource.name": upload.document_id,
        },
        payload={"path": path_text(upload.path), "sha256": upload.sha256, "document_id": upload.document_id},
    )
