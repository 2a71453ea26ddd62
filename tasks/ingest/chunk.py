"""Split an extracted document into chunks that fit the embedding model's window.

Conventions (what the tests hold the code to):

* Sections: a heading block closes the current section and opens a new one; no chunk
  mixes sections. ``Chunk.heading`` is the heading path, e.g. ``"1 Intro > 1.1 Scope"``,
  each heading whitespace-normalised.
* Budget: ``count_tokens(chunk.embedding_text) <= max_tokens`` for every chunk, checked
  with the real counter on the final text.
* Text: ``chunk.text`` is the exact extracted text: whole or sliced block texts joined
  with ``"\\n\\n"``; a slice of one block is a substring of ``Block.text``.
* Overlap: a chunk starts with the last ``overlap_sentences`` sentences of the previous
  chunk of the same section, when they fit the budget beside at least one new sentence.
* Page span: ``page_start``/``page_end`` are the first and last page of the blocks
  whose text the chunk holds, overlap included, so the span is true of every character.
* Coverage: every non-whitespace character of a body block that is not boilerplate is
  in some chunk's text, in document order. A heading lands as an element of a chunk's
  heading path; a heading with no body text under it becomes the text of a chunk of its
  own (under its parent's path), and a heading too long for the path is kept as body text.
* Identity: chunks with the same ``chunk_id`` collapse to the first; ordinals are then
  renumbered 0..n-1.
* Injection: ``chunk.injection`` lists the pages of the chunk's text (or heading) that address an AI
  system (``citesum.tasks.injection``), located by the blocks the matched text came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby, islice

from citesum.tasks import injection
from citesum.tasks.ingest.boilerplate import find_boilerplate, strip_boilerplate, text_blocks
from citesum.tasks.records import Block, Chunk, ChunkedDocument, ExtractedDocument
from citesum.tasks.text import join_heading, normalize_space, split_sentences

CountTokens = Callable[[str], int]

_WORD = re.compile(r"\S+")
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class _Piece:
    """A trimmed span of one block's text: a sentence, or part of one too long for a chunk."""

    block: Block
    block_index: int  # position in the document, so equal blocks stay apart
    start: int
    end: int
    tokens: int  # word pieces, special tokens not counted


@dataclass
class _Heading:
    block: Block
    index: int  # position in the document
    text: str  # whitespace-normalised
    landed: bool = False  # in the heading path of an emitted chunk


@dataclass(frozen=True)
class _Draft:
    heading: str
    pieces: tuple[_Piece, ...]


class _Budget:
    """Token arithmetic for one document: one ``count_tokens`` call per sentence.

    Word-piece counts add up over text joined at whitespace (the BERT pre-tokenizer
    splits there first), so a chunk is costed as the sum of its sentences; the final
    text is still counted for real and split if another tokenizer disagrees.
    """

    def __init__(self, count_tokens: CountTokens, max_tokens: int):
        self.count = count_tokens
        self.max_tokens = max_tokens
        self.special = count_tokens("")
        room = max_tokens - self.special
        if room < 8:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for text")
        # A heading path may use half the window; the rest is for the text.
        self.heading_room = room // 2

    def tokens(self, text: str) -> int:
        return self.count(text) - self.special

    def room(self, heading: str) -> int:
        return self.max_tokens - self.special - (self.tokens(heading) if heading else 0)

    def fits(self, heading: str, text: str) -> bool:
        """Whether the chunk's embedding text (as ``Chunk.embedding_text`` builds it) fits."""
        return self.count(f"{heading}\n{text}" if heading else text) <= self.max_tokens


def chunk_document(
    extracted: ExtractedDocument,
    *,
    count_tokens: CountTokens,
    max_tokens: int,
    overlap_sentences: int = 1,
    boilerplate_min_pages: int = 3,
) -> ChunkedDocument:
    """Chunks of ``extracted`` whose embedding text never exceeds ``max_tokens``.

    ``count_tokens`` counts the embedding model's word pieces, special tokens included;
    ``max_tokens`` is the budget in the same unit (at most the model's max_seq_length).
    """
    budget = _Budget(count_tokens, max_tokens)
    boilerplate = find_boilerplate(extracted.pages, boilerplate_min_pages)
    blocks = [b for page in extracted.pages for b in strip_boilerplate(page, boilerplate)]
    if not blocks:  # nothing but repeated text: then it is the content, not a running header
        boilerplate = frozenset()
        blocks = [b for page in extracted.pages for b in text_blocks(page)]
    drafts = _Sectioner(budget, overlap_sentences).run(blocks)
    chunks = _to_chunks(extracted, (d for draft in drafts for d in _enforce(draft, budget)))
    return ChunkedDocument(extracted=extracted, chunks=chunks, boilerplate=tuple(sorted(boilerplate)))


@dataclass
class _Sectioner:
    """Walks the blocks keeping the heading stack, and packs each section's body."""

    budget: _Budget
    overlap: int
    stack: list[_Heading] = field(default_factory=list)
    body: list[tuple[int, Block]] = field(default_factory=list)
    drafts: list[_Draft] = field(default_factory=list)

    def run(self, blocks: Sequence[Block]) -> list[_Draft]:
        for index, block in enumerate(blocks):
            heading = self._as_heading(block, index)
            if heading is None:
                self.body.append((index, block))
            else:
                self._flush()
                self._close(block.heading_level)
                self.stack.append(heading)
        self._flush()
        self._close(0)
        return self.drafts

    def _as_heading(self, block: Block, index: int) -> _Heading | None:
        """The heading to push, or None for body text (including a heading too long for a path)."""
        if block.heading_level <= 0:
            return None
        text = normalize_space(block.text)
        path = join_heading([*self._parents(block.heading_level), text])
        return _Heading(block, index, text) if self.budget.tokens(path) <= self.budget.heading_room else None

    def _parents(self, level: int) -> list[str]:
        return [h.text for h in self.stack if h.block.heading_level < level]

    def _close(self, level: int) -> None:
        """Pop headings of ``level`` or deeper; one with no text under it becomes a chunk."""
        while self.stack and self.stack[-1].block.heading_level >= level:
            heading = self.stack.pop()
            if not heading.landed:
                # Innermost first: its chunk carries the parents in its path, landing them.
                self.body.append((heading.index, heading.block))
                self._flush()

    def _flush(self) -> None:
        if not self.body:
            return
        heading = join_heading(h.text for h in self.stack)
        room = self.budget.room(heading)
        pieces = [p for index, block in self.body for p in _pieces(block, index, room, self.budget)]
        for group in _pack(pieces, room, self.overlap):
            self.drafts.append(_Draft(heading, tuple(group)))
        for entry in self.stack:
            entry.landed = True
        self.body = []


def _pieces(block: Block, index: int, room: int, budget: _Budget) -> Iterator[_Piece]:
    """The block's sentences, each counted once; a sentence over ``room`` is cut to fit."""
    for start, end in split_sentences(block.text):
        tokens = budget.tokens(block.text[start:end])
        if tokens <= room:
            yield _Piece(block, index, start, end, tokens)
            continue
        for s, e in _cut(block.text, start, end, lambda t: budget.tokens(t) <= room, budget.max_tokens):
            yield _Piece(block, index, s, e, budget.tokens(block.text[s:e]))


def _cut(text: str, start: int, end: int, fits: Callable[[str], bool], max_words: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into consecutive spans that fit, at word boundaries when possible.

    Every word is at least one word piece, so no span that fits holds more than
    ``max_words`` words: only that many cut points are listed, which keeps a huge
    unpunctuated block (a table dump) from being scanned whole at every cut.
    """
    spans: list[tuple[int, int]] = []
    while start < end:
        words = [m.end() for m in islice(_WORD.finditer(text, start, end), max_words)]
        stop = _longest(text, start, words, fits)
        if stop is None:  # the first word alone is too long: cut inside it
            stop = _longest(text, start, range(start + 1, words[0]), fits)
        if stop is None:
            raise ValueError(f"not even one character fits the budget: {text[start : start + 20]!r}")
        spans.append((start, stop))
        start = _SPACE.match(text, stop, end).end()
    return spans


def _longest(text: str, start: int, cuts: Sequence[int], fits: Callable[[str], bool]) -> int | None:
    """The last cut for which ``text[start:cut]`` fits, as counts grow with the text.

    Galloping from the start before bisecting keeps every try under twice the answer's
    length, so cutting a long text costs time in proportion to it, not to its square.
    """
    lo, hi, step = -1, len(cuts), 1  # cuts[lo] fits (-1: none known), cuts[hi] does not
    while lo + step < hi and fits(text[start : cuts[lo + step]]):
        lo, step = lo + step, step * 2
    hi = min(hi, lo + step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(text[start : cuts[mid]]):
            lo = mid
        else:
            hi = mid
    return cuts[lo] if lo >= 0 else None


def _pack(pieces: Sequence[_Piece], room: int, overlap: int) -> list[list[_Piece]]:
    """Greedily fill chunks up to ``room``; each next chunk opens with the overlap."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    used = fresh = 0  # tokens in ``current``; its pieces not carried over from the last chunk
    for piece in pieces:
        if fresh and used + piece.tokens > room:
            groups.append(current)
            current, fresh = _overlap(current, piece, room, overlap), 0
            used = sum(p.tokens for p in current)
        current.append(piece)
        used += piece.tokens
        fresh += 1
    if fresh:
        groups.append(current)
    return groups


def _overlap(previous: list[_Piece], nxt: _Piece, room: int, overlap: int) -> list[_Piece]:
    """The longest tail of ``previous``, up to ``overlap`` pieces, that fits beside ``nxt``."""
    for size in range(min(overlap, len(previous)), 0, -1):
        tail = previous[-size:]
        if sum(p.tokens for p in tail) + nxt.tokens <= room:
            return list(tail)
    return []


def _enforce(draft: _Draft, budget: _Budget) -> list[_Draft]:
    """Check the draft with the real counter; split it in halves while it is over."""
    if budget.fits(draft.heading, _text(draft.pieces)):
        return [draft]
    if len(draft.pieces) > 1:
        mid = len(draft.pieces) // 2
        halves = (draft.pieces[:mid], draft.pieces[mid:])
        return [d for half in halves for d in _enforce(_Draft(draft.heading, half), budget)]
    (piece,) = draft.pieces
    spans = _cut(piece.block.text, piece.start, piece.end, partial(budget.fits, draft.heading), budget.max_tokens)
    block, text = piece.block, piece.block.text
    return [
        _Draft(draft.heading, (_Piece(block, piece.block_index, s, e, budget.tokens(text[s:e])),)) for s, e in spans
    ]


def _text(pieces: Sequence[_Piece]) -> str:
    """Consecutive pieces of one block as one slice of it; blocks joined by a blank line."""
    parts = []
    for _, run in groupby(pieces, key=lambda p: p.block_index):
        run = list(run)
        parts.append(run[0].block.text[run[0].start : run[-1].end])
    return "\n\n".join(parts)


def _to_chunks(extracted: ExtractedDocument, drafts: Iterable[_Draft]) -> tuple[Chunk, ...]:
    """Chunk records in document order, identical chunks collapsed to the first."""
    source = extracted.source
    chunks: dict[str, Chunk] = {}
    for draft in drafts:
        pages = [p.block.page for p in draft.pieces]
        text = _text(draft.pieces)
        chunk = Chunk(
            document_id=source.document_id,
            version=source.version,
            source=source.path,
            page_start=min(pages),
            page_end=max(pages),
            heading=draft.heading,
            text=text,
            ordinal=len(chunks),
            injection=_injection_pages(draft, text),
        )
        chunks.setdefault(chunk.chunk_id, chunk)
    return tuple(chunks.values())


def _injection_pages(draft: _Draft, text: str) -> tuple[int, ...]:
    """Pages of the pieces that hold some of a detector hit in ``text`` (``_text(draft.pieces)``); a
    heading that addresses an AI system flags the chunk's first page."""
    found = injection.hits(text)
    pages = {min(p.block.page for p in draft.pieces)} if injection.addresses_ai(draft.heading) else set()
    offset = 0
    for _, run in groupby(draft.pieces, key=lambda p: p.block_index) if found else ():
        run = list(run)
        base = run[0].start
        for piece in run:
            start, end = offset + piece.start - base, offset + piece.end - base
            if any(h.start < end and start < h.end for h in found):
                pages.add(piece.block.page)
        offset += run[-1].end - base + len("\n\n")
    return tuple(sorted(pages))
