"""Split an extracted document into chunks that fit the embedding model's window.

(Over 400 lines: one walk over the blocks whose parts, prose and tables, share the piece, draft and
budget types and their packing; a table-chunking module would import all of them back.)

Conventions (what the tests hold the code to):

* Sections: a heading block closes the current section and opens a new one; no chunk
  mixes sections. ``Chunk.heading`` is the heading path, e.g. ``"1 Intro > 1.1 Scope"``,
  each heading whitespace-normalised.
* Budget: ``count_tokens(chunk.embedding_text) <= max_tokens`` for every chunk, checked
  with the real counter on the final text, or, when the counter's counts add up over text
  joined at whitespace (``counts_add_up``) and every piece of the chunk is so joined, as the
  sum of its heading's and its pieces' counts, which is then the same number.
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
* Tables (``Block.table``): a table's chunks hold only its rows, one a line, whole rows
  only (unless one row alone is over the budget), each chunk opening with the table's
  header rows; a table that goes on over a page break without headers of its own (the
  next body block, as many cells a row) takes the previous page's, so its chunks span
  both pages. The short lines just before a table (its caption, e.g. "Net debt:", or a title
  and a units line, at most ``CAPTION_LINES``) are the last element of the table's heading
  path. Rows of one table are joined by a line break.

Budget and overlap (``chunk_tokens`` 200, ``overlap_sentences`` 1), chosen by `citesum eval` on both development
sets, 2026-12-01 at e315565 (stores ingested fresh per setting; evidence hit@8 after rerank, candidate hit@50;
the rule: the fewest chunks whose hit@50 and evidence hit@8 stay within one point of the default's):

=========================  ======================  ======================
budget / overlap           FinanceBench            MMLongBench
                           chunks, hit@50, hit@8   chunks, hit@50, hit@8
=========================  ======================  ======================
**200 / 1 (default)**      19,934  0.966  0.814    3,405  0.981  0.883
200 / 0                    18,041  0.966  0.780    3,163  0.981  0.883
224 / 1                    17,670  0.983  0.797    3,054  0.981  0.864
256 / 1                    15,612  0.966  0.780    (not run: FinanceBench already fell)
=========================  ======================  ======================

Every setting with fewer chunks loses 1.7 to 3.4 points of evidence hit@8 (one or two FinanceBench questions,
three MMLongBench ones), so the default stays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby, islice, pairwise

from citesum.tasks import injection
from citesum.tasks.ingest.boilerplate import find_boilerplate, strip_boilerplate, text_blocks
from citesum.tasks.records import Block, Chunk, ChunkedDocument, ExtractedDocument
from citesum.tasks.text import goes_on, join_heading, normalize_space, split_sentences

CountTokens = Callable[[str], int]

_WORD = re.compile(r"\S+")
CAPTION_WORDS = 15  # a table's caption is a short line; longer text before a table is a paragraph
# A statement's title and its units line ("Consolidated Statements of Earnings", "(in millions)"): without the
# title in the heading path, the statement's chunks did not come up for questions that name it (FinanceBench).
CAPTION_LINES = 2
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
    header: tuple[_Piece, ...] = ()  # a table's header rows, repeated on each of its chunks

    @property
    def all_pieces(self) -> tuple[_Piece, ...]:
        return self.header + self.pieces


# What str.split() cuts at but BERT's normalizer deletes as a control character, joining the words either side.
_DELETED_SPACE = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


class _Budget:
    """Token arithmetic for one document: one ``count_tokens`` call per distinct text, or per distinct word when
    counts add up.

    Word-piece counts add up over text joined at whitespace (the BERT pre-tokenizer
    splits there first), so a chunk is costed as the sum of its sentences. Its final
    text is counted for real and split if the counter disagrees, unless the counter is
    known to add up (``counts_add_up``) and no two of its pieces touch: counting every
    chunk again took 5.7 s of the 29 FinanceBench filings' 22 s of chunking.
    """

    def __init__(self, count_tokens: CountTokens, max_tokens: int, counts_add_up: bool = False):
        self.count = count_tokens
        self.max_tokens = max_tokens
        self.counts_add_up = counts_add_up
        self.special = count_tokens("")
        # A heading path is costed for each chunk under it, a repeated sentence where it recurs: the 29 FinanceBench
        # filings made 117,907 counts, 78,646 counting each text of a document once. Counting each word once instead
        # makes 203,095 counts of single words and took 5 s less CPU (chunking them: 17 -> 12 s).
        self._counted: dict[str, int] = {}
        room = max_tokens - self.special
        if room < 8:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for text")
        # A heading path may use half the window; the rest is for the text.
        self.heading_room = room // 2

    def tokens(self, text: str) -> int:
        counted = self._counted.get(text)
        if counted is None:
            # Counts that add up over whitespace joins add up over a text's words, which repeat far more than its
            # sentences.
            words = text.split() if self.counts_add_up and not _DELETED_SPACE.search(text) else [text]
            counted = sum(map(self.tokens, words)) if len(words) > 1 else self.count(text) - self.special
            self._counted[text] = counted
        return counted

    def room(self, heading: str) -> int:
        return self.max_tokens - self.special - (self.tokens(heading) if heading else 0)

    def fits(self, heading: str, text: str) -> bool:
        """Whether the chunk's embedding text (as ``Chunk.embedding_text`` builds it) fits."""
        return self.count(f"{heading}\n{text}" if heading else text) <= self.max_tokens

    def draft_fits(self, draft: _Draft) -> bool:
        """Whether the draft's chunk fits: its pieces' counts added up, when they add up to its count, else
        ``fits`` on its text."""
        pieces = draft.all_pieces
        if not self.counts_add_up or any(_touch(a, b) for a, b in pairwise(pieces)):
            return self.fits(draft.heading, _text(pieces))
        heading = self.tokens(draft.heading) if draft.heading else 0
        return self.special + heading + sum(p.tokens for p in pieces) <= self.max_tokens


def chunk_document(
    extracted: ExtractedDocument,
    *,
    count_tokens: CountTokens,
    max_tokens: int,
    overlap_sentences: int = 1,
    boilerplate_min_pages: int = 3,
    counts_add_up: bool = False,
) -> ChunkedDocument:
    """Chunks of ``extracted`` whose embedding text never exceeds ``max_tokens``.

    ``count_tokens`` counts the embedding model's word pieces, special tokens included;
    ``max_tokens`` is the budget in the same unit (at most the model's max_seq_length).
    ``counts_add_up``: the count of texts joined at whitespace is the sum of theirs
    (``citesum.tasks.embed.counts_add_up``), so a chunk need not be counted again.
    """
    budget = _Budget(count_tokens, max_tokens, counts_add_up)
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
        header: tuple[_Piece, ...] = ()
        fits = lambda caption: self._caption_path(heading, caption) != heading  # noqa: E731
        for is_table, run in groupby(_with_captions(self.body, fits), key=lambda entry: entry[1].table):
            run = list(run)
            if not is_table:
                self._pack_text(heading, [(index, block) for index, block, _ in run])
                header = ()  # only a table right after another goes on from it
                continue
            path = heading
            for index, block, caption in run:
                previous, header = header, _header_pieces(block, index, self.budget, header)
                if not (header and header is previous):  # a table going on keeps its caption too
                    path = self._caption_path(heading, caption)
                self.drafts.extend(_pack_table(block, index, path, header, self.budget))
        for entry in self.stack:
            entry.landed = True
        self.body = []

    def _pack_text(self, heading: str, body: list[tuple[int, Block]]) -> None:
        room = self.budget.room(heading)
        pieces = [p for index, block in body for p in _pieces(block, index, room, self.budget)]
        for group in _pack(pieces, room, self.overlap):
            self.drafts.append(_Draft(heading, tuple(group)))

    def _caption_path(self, heading: str, caption: tuple[Block, ...]) -> str:
        if not caption:
            return heading
        text = " ".join(normalize_space(block.text) for block in caption)
        path = join_heading([*(h.text for h in self.stack), text])
        return path if self.budget.tokens(path) <= self.budget.heading_room else heading


def _with_captions(
    body: list[tuple[int, Block]], fits: Callable[[tuple[Block, ...]], bool]
) -> Iterator[tuple[int, Block, tuple[Block, ...]]]:
    """The body's blocks, each table with its caption: up to ``CAPTION_LINES`` short lines just before it that are
    no sentence (a statement's title and its units line), as many as ``fit`` the heading path. The caption is then
    not body text: it lands in the table's heading path."""

    def is_short(block: Block) -> bool:
        text = block.text.strip()
        return not block.table and 0 < len(text.split()) <= CAPTION_WORDS and text[-1] not in ".;,"

    captions: dict[int, tuple[Block, ...]] = {}  # a table's position in the body -> its caption
    for position, (_, block) in enumerate(body):
        if not block.table:
            continue
        start = position
        while start > 0 and position - start < CAPTION_LINES and is_short(body[start - 1][1]):
            start -= 1
        while start < position and not fits(tuple(b for _, b in body[start:position])):
            start += 1  # the lines farthest from the table go first
        captions[position] = tuple(b for _, b in body[start:position])
    taken = {p for position, caption in captions.items() for p in range(position - len(caption), position)}
    for position, (index, block) in enumerate(body):
        if position not in taken:
            yield index, block, captions.get(position, ())


def _header_pieces(block: Block, index: int, budget: _Budget, previous: tuple[_Piece, ...]) -> tuple[_Piece, ...]:
    """The table's header rows as pieces; a table without any goes on from the one before it (``previous``)
    when its rows have as many cells as that table's header."""
    rows = _row_spans(block.text)
    if block.header_rows:
        return tuple(_Piece(block, index, s, e, budget.tokens(block.text[s:e])) for s, e in rows[: block.header_rows])
    cells = block.text[slice(*rows[0])].count("|") if rows else -1
    first = previous[0] if previous else None
    return previous if first and first.block.text[first.start : first.end].count("|") == cells else ()


def _row_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _pack_table(block: Block, index: int, heading: str, header: tuple[_Piece, ...], budget: _Budget) -> list[_Draft]:
    """The table's rows in chunks that each open with ``header``; a row alone over the budget is cut."""
    own = {(p.start, p.end) for p in header if p.block_index == index}
    room = budget.room(heading) - sum(p.tokens for p in header)
    if room < budget.room(heading) // 4:  # headers too long to repeat: the rows alone
        header, room, own = (), budget.room(heading), set()
    rows = [span for span in _row_spans(block.text) if span not in own]
    pieces = [p for start, end in rows for p in _fitted(block, index, start, end, room, budget)]
    if not pieces:  # a table of nothing but its header rows
        return [_Draft(heading, header)] if header and own else []
    return [_Draft(heading, tuple(group), header) for group in _pack(pieces, room, 0)]


def _pieces(block: Block, index: int, room: int, budget: _Budget) -> Iterator[_Piece]:
    """The block's sentences, each counted once; a sentence over ``room`` is cut to fit."""
    for start, end in split_sentences(block.text):
        yield from _fitted(block, index, start, end, room, budget)


def _fitted(block: Block, index: int, start: int, end: int, room: int, budget: _Budget) -> Iterator[_Piece]:
    """``block.text[start:end]`` as one piece, or cut into pieces of at most ``room`` tokens."""
    tokens = budget.tokens(block.text[start:end])
    if tokens <= room:
        yield _Piece(block, index, start, end, tokens)
        return
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
    """The longest tail of ``previous``, up to ``overlap`` sentences, that fits beside ``nxt``. A tail begins where a
    sentence does: a sentence broken over a page or column is two pieces, and its second alone opened chunks in
    the middle of a sentence ("Controlled Group or against the Controlled Group's interests.")."""
    for size in range(min(overlap, len(previous)), 0, -1):
        start = len(previous) - size
        while start > 0 and _goes_on(previous[start - 1], previous[start]):
            start -= 1
        tail = previous[start:]
        if sum(p.tokens for p in tail) + nxt.tokens <= room:
            return list(tail)
    return []


def _goes_on(previous: _Piece, piece: _Piece) -> bool:
    """``piece`` opens its block and goes on with the sentence that ``previous``, the end of the block before, stops
    inside (``text.goes_on``)."""
    if previous.block_index == piece.block_index or piece.block.text[: piece.start].strip():
        return False
    return goes_on(previous.block.text[previous.start : previous.end], piece.block.text[piece.start : piece.end])


def _enforce(draft: _Draft, budget: _Budget) -> list[_Draft]:
    """Check the draft with the real counter; split it in halves while it is over (a table's header goes with
    each half, and is dropped from a single row that does not fit beside it)."""
    if budget.draft_fits(draft):
        return [draft]
    if len(draft.pieces) > 1:
        mid = len(draft.pieces) // 2
        halves = (draft.pieces[:mid], draft.pieces[mid:])
        return [d for half in halves for d in _enforce(_Draft(draft.heading, half, draft.header), budget)]
    if draft.header:
        return _enforce(_Draft(draft.heading, draft.pieces), budget)
    (piece,) = draft.pieces
    spans = _cut(piece.block.text, piece.start, piece.end, partial(budget.fits, draft.heading), budget.max_tokens)
    block, text = piece.block, piece.block.text
    return [
        _Draft(draft.heading, (_Piece(block, piece.block_index, s, e, budget.tokens(text[s:e])),)) for s, e in spans
    ]


def _text(pieces: Sequence[_Piece]) -> str:
    """Consecutive pieces of one block as one slice of it; blocks joined by a blank line, a table's rows (its
    header, then rows further on, or on the next page) by a line break."""
    return "".join(part for part, _ in _parts(pieces))


def _parts(pieces: Sequence[_Piece]) -> list[tuple[str, int]]:
    """The pieces of ``_text(pieces)`` (slices and separators), each with the index of the piece it starts with
    (-1 for a separator): where each piece's text lies in the chunk's."""
    parts: list[tuple[str, int]] = []
    before, position = None, 0
    for first, last in _runs(pieces):
        if before is not None:
            parts.append(("\n" if before.table and first.block.table else "\n\n", -1))
        parts.append((first.block.text[first.start : last.end], position))
        position += pieces[position:].index(last) + 1
        before = first.block
    return parts


def _runs(pieces: Sequence[_Piece]) -> list[tuple[_Piece, _Piece]]:
    """The first and last piece of each run of pieces that follow one another in one block."""
    runs: list[tuple[_Piece, _Piece]] = []
    for piece in pieces:
        if runs and _follows(runs[-1][1], piece):
            runs[-1] = (runs[-1][0], piece)
        else:
            runs.append((piece, piece))
    return runs


def _touch(previous: _Piece, piece: _Piece) -> bool:
    """The two pieces are joined with no whitespace between them (a word cut in two), where counts need not add up."""
    return previous.block_index == piece.block_index and previous.end == piece.start


def _follows(previous: _Piece, piece: _Piece) -> bool:
    same = previous.block_index == piece.block_index and previous.end <= piece.start
    return same and not previous.block.text[previous.end : piece.start].strip()


def _to_chunks(extracted: ExtractedDocument, drafts: Iterable[_Draft]) -> tuple[Chunk, ...]:
    """Chunk records in document order, identical chunks collapsed to the first."""
    source = extracted.source
    chunks: dict[str, Chunk] = {}
    for draft in drafts:
        pages = [p.block.page for p in draft.all_pieces]
        text = _text(draft.all_pieces)
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
    """Pages of the pieces that hold some of a detector hit in ``text`` (``_text(draft.all_pieces)``); a
    heading that addresses an AI system flags the chunk's first page."""
    found = injection.hits(text)
    pieces = draft.all_pieces
    pages = {min(p.block.page for p in pieces)} if injection.addresses_ai(draft.heading) else set()
    offset = 0
    for part, index in _parts(pieces) if found else ():
        if index >= 0:
            base = pieces[index].start
            for piece in pieces[index:]:
                if piece.block_index != pieces[index].block_index or piece.end > base + len(part):
                    break
                start, end = offset + piece.start - base, offset + piece.end - base
                if any(h.start < end and start < h.end for h in found):
                    pages.add(piece.block.page)
        offset += len(part)
    return tuple(sorted(pages))
