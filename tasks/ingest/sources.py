"""Which PDFs make up the corpus and which bytes each holds: discovery and sha256 versions.

Discovery never blocks and never stops at one entry: a FIFO, socket or device named ``*.pdf``,
a file that cannot be read, one that changes while it is hashed, one over the size limit, and a
link that leaves the corpus (or loops) each become a ``Rejected`` entry for the report. Links are
followed when they stay inside the corpus (``follow_symlinks="inside"``), or always.
``sources_to_ingest`` is what the command line checks before any engine starts: it imports no engine.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.names import path_text, text_path
from citesum.tasks.records import SourceFile
from citesum.tasks.settings import Settings

FollowSymlinks = Literal["inside", "always"]

# A rejected entry either fails (a document the user meant to ingest could not be read) or is skipped
# (not a document this corpus ingests: a special file, a link out of the corpus).
FAILING = frozenset({"unreadable", "changed_while_read", "too_large"})


@dataclass(frozen=True)
class Rejected:
    """An entry of the corpus that is not ingested, and why."""

    document_id: str
    path: str  # as text (names.path_text)
    kind: str  # not_regular, outside_corpus, symlink_loop, broken_link, unreadable, changed_while_read, too_large
    message: str

    @property
    def fails(self) -> bool:
        return self.kind in FAILING


@dataclass(frozen=True)
class Discovery:
    sources: list[SourceFile]
    rejected: list[Rejected]


class SourceError(OSError):
    """A file that cannot be hashed as a document: ``kind`` as in ``Rejected``."""

    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message
        super().__init__(message)


def open_regular(path: Path | str, *, follow: bool = True) -> int:
    """A read-only descriptor of a regular file, opened without blocking (a FIFO would wait for a writer).

    Raises ``SourceError`` (not_regular) for anything else, so what is checked is what is read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise SourceError("not_regular", "a symbolic link, not a file") from exc
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SourceError("not_regular", f"not a regular file ({file_type(mode)})")
    os.set_blocking(fd, True)
    return fd


def file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def hash_file(path: Path | str, chunk_size: int = 1 << 20, *, follow: bool = True) -> str:
    """sha256 hex digest of a regular file's bytes, read in chunks (PDFs can be large).

    Raises ``SourceError``: not_regular, or changed_while_read when its size or mtime moved meanwhile.
    """
    digest = hashlib.sha256()
    fd = open_regular(path, follow=follow)
    with open(fd, "rb") as file:
        before = os.fstat(fd)
        while chunk := file.read(chunk_size):
            digest.update(chunk)
        after = os.fstat(fd)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        raise SourceError("changed_while_read", "the file changed while it was read; the next run reads it")
    return digest.hexdigest()


def is_current(source: SourceFile) -> bool:
    """Whether the file still holds the bytes it was read with (another run or an upload may have changed it)."""
    try:
        return hash_file(text_path(source.path)) == source.version
    except OSError:
        return False


def source_for(path: Path, root: Path, max_bytes: int | None = None) -> SourceFile:
    """The ``SourceFile`` of one PDF; its id is its path relative to ``root``, as text.

    Raises ``SourceError`` (or another ``OSError``) when it cannot be read as a file.
    """
    path, root = path.absolute(), root.absolute()
    document_id = path_text(path.relative_to(root).as_posix())
    size = os.stat(path).st_size
    if max_bytes is not None and size > max_bytes:
        raise SourceError("too_large", f"{size:,} bytes, over the limit of {max_bytes:,} (CITESUM_MAX_FILE_BYTES)")
    return SourceFile(document_id=document_id, path=path_text(path), version=hash_file(path), size=size)


def discover_sources(
    root: Path, *, follow_symlinks: FollowSymlinks = "inside", max_bytes: int | None = None
) -> Discovery:
    """Every ``*.pdf`` (any case) under ``root``, recursively, sorted by document id, and what was rejected."""
    root = Path(os.path.realpath(root))
    sources, rejected = [], []
    for path, problem in _walk(root, follow_symlinks):
        if problem is not None:
            rejected.append(_rejected(path, root, *problem))
            continue
        try:
            sources.append(source_for(path, root, max_bytes))
        except SourceError as exc:
            rejected.append(_rejected(path, root, exc.kind, exc.message))
        except OSError as exc:
            rejected.append(_rejected(path, root, "unreadable", f"cannot read the file: {exc.strerror}"))
    return Discovery(sorted(sources, key=lambda s: s.document_id), sorted(rejected, key=lambda r: r.document_id))


def _rejected(path: Path, root: Path, kind: str, message: str) -> Rejected:
    return Rejected(path_text(path.relative_to(root).as_posix()), path_text(path), kind, message)


def _walk(root: Path, follow: FollowSymlinks):
    """(path, None) for each PDF-named regular file, (path, (kind, message)) for each entry refused.

    Folders are entered once by inode, so a link back up the tree (a loop) is reported, not followed.
    """
    seen = {_inode(root)}
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            yield folder, ("unreadable", f"cannot list the folder: {exc.strerror}")
            continue
        for entry in entries:
            path = Path(entry.path)
            is_pdf = entry.name.lower().endswith(".pdf")
            if entry.is_symlink():
                problem = _link_problem(path, root, follow)
                if problem is not None:
                    if is_pdf or problem[0] != "broken_link":
                        yield path, problem
                    continue
            try:
                st = os.stat(path)
            except OSError as exc:
                if is_pdf:
                    yield path, ("unreadable", f"cannot read the file: {exc.strerror}")
                continue
            if stat.S_ISDIR(st.st_mode):
                if _inode_of(st) in seen:
                    yield (
                        path,
                        (
                            "symlink_loop",
                            "a link to a folder walked already (a loop, or a second way to it): not followed",
                        ),
                    )
                else:
                    seen.add(_inode_of(st))
                    folders.append(path)
            elif is_pdf:
                yield path, None if stat.S_ISREG(st.st_mode) else ("not_regular", file_type(st.st_mode) + ", not a PDF")


def _link_problem(path: Path, root: Path, follow: FollowSymlinks) -> tuple[str, str] | None:
    try:
        target = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink_loop", "a symbolic link loop: not followed"
        return "broken_link", "a symbolic link to nothing"
    if follow == "inside" and not target.is_relative_to(root):
        return "outside_corpus", (
            f"a link to {path_text(target)}, outside the corpus: not ingested "
            "(CITESUM_FOLLOW_SYMLINKS=always follows it)"
        )
    return None


def _inode(path: Path) -> tuple[int, int]:
    return _inode_of(os.stat(path))


def _inode_of(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def sources_to_ingest(target: Path, settings: Settings) -> tuple[Discovery, Path | None]:
    """A folder is a full corpus run; a single file is ingested alone and deletes nothing.

    Entries that cannot be ingested (special files, links out of the corpus, unreadable files) are
    returned as ``Rejected``, never raised: one bad entry does not stop the batch. A folder without a
    PDF to ingest is refused: a full run of it would delete every stored document (a corpus folder gone
    empty, a wrong path); removing documents is ``citesum forget``'s job.
    """
    if target.is_dir():
        root = target.resolve()
        found = discover_sources(
            root, follow_symlinks=settings.ingest.follow_symlinks, max_bytes=settings.ingest.max_file_bytes
        )
        if not found.sources:
            refused = (
                f" ({len(found.rejected)} entries refused, e.g. {found.rejected[0].document_id})"
                if found.rejected
                else ""
            )
            raise ConfigurationError(f"{target}: no PDF found{refused}")
        return found, root
    if not target.exists() and not target.is_symlink():
        raise ConfigurationError(f"{target}: no such file or folder")
    file, corpus = target.resolve(), settings.ingest.corpus.resolve()
    root = corpus if file.is_relative_to(corpus) else file.parent
    try:
        return Discovery([source_for(file, root, settings.ingest.max_file_bytes)], []), None
    except SourceError as exc:
        problem = (exc.kind, exc.message)
    except OSError as exc:
        problem = ("unreadable", f"cannot read the file: {exc.strerror}")
    rejected = Rejected(path_text(file.relative_to(root).as_posix()), path_text(file), *problem)
    return Discovery([], [rejected]), None
