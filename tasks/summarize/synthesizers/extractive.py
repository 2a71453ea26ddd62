"""The extractive synthesizer: verbatim sentences of the evidence, each cited.

It never writes text of its own. Each sentence of the evidence gets a relevance to the
instruction: its cosine with it, the share of the instruction's keywords it holds (asked, read
under its chunk's heading; IDF over the sentences, as the reranker weighs chunks) and its
chunk's rerank score, in equal parts; when the instruction asks for a quantity
(``asks_for_quantity``: "how many", "what ratio", "in millions", "round ..."), holding a figure
(a number other than a year) is a fourth equal part. Sentences far less relevant than the best
are left out. A piece under ``MIN_WORDS`` is a candidate only when it holds one of the
instruction's keywords (a lookup's answer: "Little Rock AR01 2." for "the market name for code AR01")
and is no running title in capitals ("THE BOEING COMPANY"). Asked, a sentence made only of the
question's own keywords is no candidate: it echoes the question (a column header, "EPS Geographic
Market Name Code" for "the geographic market name for EPS Code AR01") and answers nothing. The
summary first takes the evidence's best match to the instruction, judged sentence by sentence (the same parts less
its chunk's score: an answer in a chunk the reranker ranked low is still quoted; for a question
asking two things, ``question_parts``, the best match to each), then the
best sentence of each other of the first ``COVER`` evidence chunks, in rank order, when its own
cosine is near the best sentence's (``COVER_COSINE``: a chunk the reranker liked for its
heading alone gives nothing; a part written unasked, a topic, whose first chunks lead its sections, quotes each)
and, asked, when its chunk's rerank score (scaled 0..1 within the evidence) is at least ``COVER_SCORE``: a chunk
scored far below the first, or with no sentence to quote, leaves its place to one more sentence by relevance, mostly
of the chunks ranked above it; then up to ``EXTRA`` more by relevance, skipping near-repeats;
each sentence cites the chunk it came from. When no chunk of the evidence (its text or heading)
holds a single keyword of the user's question (``is_question``), nothing bears on it: the
synthesizer says "Not stated in the evidence." instead of quoting the least unrelated sentences
("What is the capital of Mongolia?" asked of a services agreement). The test is deliberately
literal: a sharper measure of whether evidence answers a question (cosine, keyword share, names
absent from the candidates) separated none of the development sets' unanswerable questions from
the answerable ones (README, Summary quality). A sentence over ``MAX_WORDS`` (common in
contracts) is quoted by its clauses instead: verbatim spans split at ";", ":" and item
markers such as "(a)", each a candidate of its own; a clause still over the cap is left out.
A heading that extraction ran into a sentence ("Use of Estimates The preparation of ...", ``run_in_heading``) is
left out of its quote. A table row is quoted as its finding, its label and each value under its column's name
("Total debt: 2018 $14,622; 2017 $13,949"); validation checks it against the row. A part written
unasked (a topic) quotes no table of contents ("Properties 18 Item 3."), no sentence that only points elsewhere
("For more information, see Item 1A."), is a title ("Notes to Consolidated Financial Statements.") or runs a chart's
labels and values together ("Poor Not good Good Excellent 39 58 Total 36 9 75 22"), no form field with its check boxes
("Yes ☒ No ☐ Indicate by check mark ..."), no question (a survey's wording, ``is_question``), no piece under
``MIN_WORDS`` and no part of a sentence (a chunk that begins inside one, a lead-in to a list: ``is_fragment``; a long
sentence's clauses are still quoted), unless that is all its evidence (a statement on its contents pages first, a
cover page run into them); and a filing's standard language ("Based on my knowledge, this report does not contain any
untrue statement ...", ``is_boilerplate``) only when its part has nothing else to say. It reads its evidence's
paragraphs apart (``split_sentences(paragraphs=True)``: a chart's credit line is not run into the sentence after it),
and quotes a sentence that can be read alone before one that leans on the sentence before it (``refers_back``:
"During that period ...", "It is fed through ..."). A question's summary reads as before: a label and its value in
two blocks are one lookup's answer, and an answer may lean.

The selection and its constants were chosen on the development sets; every variant measured, with its
figures, is in the README (Evaluation, Summary quality: how the extractive selection was chosen).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citesum.tasks.embed import Embedder
from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.summarize.rerank import coverage, local_idf, terms
from citesum.tasks.summarize.retrieve import asks_for_quantity, keyword_query, question_parts
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.summarize.synthesizers.prompts import NOT_STATED
from citesum.tasks.tables import is_year, row_cells, row_findings
from citesum.tasks.text import (
    is_boilerplate,
    is_chart_text,
    is_contents,
    is_form_field,
    is_fragment,
    is_pointer,
    is_question,
    is_title,
    normalize_space,
    refers_back,
    run_in_heading,
    sentences,
    split_sentences,
    table_rows,
    tokens,
)

MIN_WORDS = 6  # shorter pieces are headings, table cells or fragments, not statements
SHORT_WORDS = 2  # ... unless they hold a keyword of the instruction: a lookup's answer ("Little Rock AR01 2.")
MAX_WORDS = 80  # longer "sentences" are split into clauses: run-on table rows, lists, contract clauses
COVER = 4  # the first evidence chunks that each give their best sentence (when it passes the floor)
COVER_COSINE = 0.75  # share of the best sentence's cosine a chunk's best sentence needs to be taken as cover
COVER_SCORE = 0.3  # asked, the scaled rerank score a chunk needs to give a sentence as cover (else an extra does)
EXTRA = 2  # sentences taken after those, by relevance alone
REDUNDANCY = 0.85  # similarity above which a sentence repeats one already chosen
RELEVANCE_FLOOR = 0.5  # share of the best sentence's relevance a sentence needs to be kept


@dataclass(frozen=True)
class _Sentence:
    text: str  # whitespace-normalised, otherwise verbatim
    citations: tuple[str, ...]
    order: int  # evidence rank, then position in the chunk
    prior: float = 1.0  # the chunk's rerank score, scaled to 0..1 within the evidence
    clause: bool = False  # a clause of a sentence over the word cap, not a sentence or a row
    standard: bool = False  # unasked, a filing's standard language (``is_boilerplate``) or a clause of it
    heading: str = ""  # asked, its chunk's heading path: what it is read under (``sentence_parts``)


def evidence_sentences(evidence: Sequence[Evidence], instruction: str = "", *, asked: bool = True) -> list[_Sentence]:
    """Every statement-like sentence of the evidence, once, with the label of its first chunk.

    A piece under ``MIN_WORDS`` is kept only when it holds a keyword of ``instruction``. ``asked=False`` (a part
    written unasked, a topic, whose tables of contents ``SynthesisRequest.readable`` leaves out): no sentence
    that only points elsewhere (``is_pointer``: "For more information, see Item 1A."), is a title (``is_title``: a
    running header "Object Storage Service Product Introduction 9 Basic Concepts"), a contents line run on
    (``is_contents``), a chart's labels and values (``is_chart_text``) or a cover page's check boxes
    (``is_form_field``), no question (``is_question``), no piece under ``MIN_WORDS`` (its topic's words are a
    heading's, not a question's: "Article III." under "ARTICLE 5"), and no part of a sentence (``is_fragment``:
    "operating income and a $15.8 million decrease ...", a chunk begun inside a sentence); a brief quoting
    "Properties 18 Item 3." says nothing, while a question may ask where something is."""
    keywords = set(terms(keyword_query(instruction))) if asked else set()
    seen: set[str] = set()
    found: list[_Sentence] = []
    scores = np.array([item.score for item in evidence], float)
    spread = float(scores.max() - scores.min()) if len(scores) else 0.0
    for item in evidence:
        prior = (item.score - scores.min()) / spread if spread > 0 else 1.0
        text = item.text
        # Unasked, the instruction is a topic, its section's own heading, which every sentence of the section would
        # hold whole: its keywords would no longer tell them apart.
        heading = item.candidate.chunk.heading if asked else ""
        rows, row_spans = row_findings(text), set(table_rows(text))
        for start, end in split_sentences(text, paragraphs=not asked):
            if (start, end) in row_spans:  # a header or label row is no finding
                row = rows.get(tuple(row_cells(text[start:end])))
                if row is not None and row.lower() not in seen:
                    seen.add(row.lower())
                    found.append(_Sentence(row, (item.label,), len(found), float(prior), heading=heading))
                continue
            whole = normalize_space(text[start:end])
            whole = whole[len(run_in_heading(whole)) :].lstrip()  # its heading is the part's, not a finding's
            if not asked and is_fragment(whole):
                continue  # a long sentence's clauses are fragments too, and are quoted: only whole ones are judged
            pieces = quotable(whole)
            clause = len(pieces) > 1
            standard = not asked and is_boilerplate(whole)  # the list a notice opens is the notice too
            for sentence in pieces:
                if (
                    not _statement(sentence, keywords)
                    or sentence.lower() in seen
                    or (not asked and _says_nothing(sentence))
                ):
                    continue
                seen.add(sentence.lower())
                found.append(_Sentence(sentence, (item.label,), len(found), float(prior), clause, standard, heading))
    return found


def _says_nothing(sentence: str) -> bool:
    """A pointer elsewhere, a title, a contents line run on, a chart's numbers, a cover page's check boxes, a question
    (a survey's wording): they help a reader find or read things, and say nothing in a brief."""
    tests = (is_pointer, is_title, is_contents, is_chart_text, is_form_field, is_question)
    return any(test(sentence) for test in tests)


def keywords_missing(instruction: str, evidence: Sequence[Evidence]) -> list[str]:
    """The instruction's keywords when no chunk of the evidence (text or heading) holds any of them, else []."""
    keywords = list(dict.fromkeys(terms(keyword_query(instruction))))
    held = set(terms(" ".join(f"{e.candidate.chunk.heading} {e.text}" for e in evidence)))
    return [] if held.intersection(keywords) else keywords


def _statement(sentence: str, keywords: set[str]) -> bool:
    """Long enough to say something (or short and naming what was asked, but no running title in capitals: "THE
    BOEING COMPANY" names the company a question asks about and says nothing of it), short enough to quote, and
    more than the question's own words (a header that echoes it)."""
    if keywords and (held := set(terms(sentence))) and held <= keywords:
        return False  # a brief (no keywords) pays nothing for this: it reads every chunk in exhaustive mode
    count = word_count(sentence)
    if count < MIN_WORDS:
        shouted = sentence.isupper() and is_title(sentence)
        return count >= SHORT_WORDS and not keywords.isdisjoint(terms(sentence)) and not shouted
    return count <= MAX_WORDS


def word_count(sentence: str) -> int:
    return sum(not t[0].isdigit() for t in tokens(sentence))


def quotable(sentence: str) -> list[str]:
    """The sentence itself, or, when it is over the word cap, its clauses (verbatim spans)."""
    if word_count(sentence) <= MAX_WORDS:
        return [sentence]
    pieces = sentences(sentence, clauses=True, enumerations=True)
    # A clause's closing ";" or ":" joins it to the next one: dropped, the span stays verbatim.
    return [piece.rstrip(";:, ") for piece in pieces]


class ExtractiveSynthesizer:
    """Selects verbatim evidence sentences; used when no LLM is reachable, or chosen."""

    name = "extractive"
    verbatim = True

    def __init__(self, embedder: Embedder, *, context_tokens: int = 4096):
        self._embedder = embedder
        self.context_tokens = context_tokens

    def synthesize(self, request: SynthesisRequest) -> Draft:
        if request.is_question and (missing := keywords_missing(request.instruction, request.evidence)):
            return Draft(
                sentences=(CitedSentence(NOT_STATED, ()),),
                raw=f"- {NOT_STATED}\n(no evidence passage holds a keyword of the request: {', '.join(missing)})",
            )
        pool = evidence_sentences(request.readable, request.instruction, asked=request.is_question)
        if not request.is_question:
            # A statement on a contents page (a cover page run into it) before what the contents list; a filing's
            # standard language only when its part has nothing else to say.
            pool = pool or evidence_sentences(request.evidence, request.instruction, asked=False)
            pool = [s for s in pool if not s.standard] or pool
        if not pool:  # a part that is nothing but a table of contents still says what it lists
            pool = evidence_sentences(request.evidence, request.instruction)
        chunks = [item.label for item in request.evidence]
        return self._draft(
            self._select(
                request.instruction, pool, request.max_sentences, cover=chunks[:COVER], strict=request.is_question
            )
        )

    def merge(self, request: MergeRequest) -> Draft:
        """The most relevant of the points, verbatim, with their citations."""
        pool = [_Sentence(p.text, p.citations, i) for i, p in enumerate(request.points)]
        return self._draft(self._select(request.instruction, pool, request.max_sentences))

    @staticmethod
    def _draft(chosen: list[_Sentence]) -> Draft:
        sentences = tuple(CitedSentence(s.text, s.citations) for s in chosen)
        raw = "\n".join(f"- {s.text} " + "".join(f"[{c}]" for c in s.citations) for s in sentences)
        return Draft(sentences=sentences, raw=raw)

    def _select(
        self, instruction: str, pool: list[_Sentence], limit: int, cover: Sequence[str] = (), strict: bool = True
    ) -> list[_Sentence]:
        """Up to ``limit`` sentences. With ``cover`` (a query's or topic's evidence in rank order): the best match
        to the instruction (to each thing it asks) judged sentence by sentence (its chunk's rank aside), the best
        of each chunk in ``cover``, then ``EXTRA`` more by relevance. Without (merging points): by relevance alone."""
        if not pool:
            return []
        asked = question_parts(instruction) if cover else []
        extra = asked if len(asked) > 1 else []  # each thing a compound question asks, embedded apart
        vectors = self._embedder.embed([instruction, *extra] + [s.text for s in pool])
        query, rows = vectors[0], vectors[1 + len(extra) :]
        similarity = rows @ rows.T
        cosine = np.clip(rows @ query, 0.0, None)
        parts = sentence_parts(instruction, pool, cosine)
        # Each thing asked, judged on its own parts: the whole question's unless it asks two things.
        asked_vectors = vectors[1 : 1 + len(extra)]
        each = [
            sentence_parts(q, pool, np.clip(rows @ v, 0.0, None)) for q, v in zip(extra, asked_vectors, strict=True)
        ]
        relevance = _mean([*parts, np.array([s.prior for s in pool])])
        leans = np.array([not strict and refers_back(s.text) for s in pool])  # a question's answer may lean
        by_relevance = [int(i) for i in np.argsort(-relevance, kind="stable")]
        # Off-topic sentences of a selected chunk stay out even when the section has room.
        floor = RELEVANCE_FLOOR * relevance.max()
        ranked = [i for i in by_relevance if relevance[i] >= floor]
        if strict:  # asked, a chunk gives a sentence only when one is close to the question
            close = cosine >= COVER_COSINE * float(cosine.max())
            covering = [i for i in ranked if close[i]]
        else:  # a topic quotes each of its first chunks, its sections' leads (``tasks.by_section``), a whole
            # sentence before a clause of a long one, and one read alone before one that leans on the sentence
            # before it ("During that period ...": ``leans``), here and in its extras and best match
            covering = sorted(by_relevance, key=lambda i: (pool[i].clause, leans[i]))
            ranked = sorted(ranked, key=lambda i: leans[i])
        # Asked, a chunk the reranker scored far below the first, or with nothing to quote, gives its place to an
        # extra: on the development sets such chunks' cover sentences were rarely on a gold page, and an extra of
        # the chunks above did better than a shorter summary (README, how the extractive selection was chosen).
        scored = {s.citations[0]: s.prior for s in pool}
        low = {label for label in cover if strict and scored.get(label, 0.0) < COVER_SCORE}
        picked: list[int] = []
        if cover:  # the evidence's best match to each thing the question asks, wherever its chunk ranked
            picked.extend(best_matches(each or [parts], similarity, leans)[:limit])
        for label in cover:
            if len(picked) >= limit:
                break
            if label in low or any(pool[i].citations[0] == label for i in picked):
                continue  # scored low, or the best match covers its chunk
            of_chunk = (i for i in covering if pool[i].citations[0] == label)
            if (best := next((i for i in of_chunk if _fresh(i, picked, similarity)), None)) is not None:
                picked.append(best)
        if cover:
            limit = min(limit, len(picked) + EXTRA + len(low))
        for i in ranked:
            if len(picked) >= limit:
                break
            if i not in picked and _fresh(i, picked, similarity):
                picked.append(i)
        # Reading order within the section: evidence rank, then position in its chunk.
        return sorted((pool[i] for i in picked), key=lambda s: s.order)


def best_matches(asked: Sequence[list[np.ndarray]], similarity: np.ndarray, leans: np.ndarray) -> list[int]:
    """For each question (its sentences' own parts of relevance, ``sentence_parts``) the sentence that matches it
    best, unless that one repeats a sentence already matched: a question asking two things ("How much are the
    fees and when are invoices due?") gets an answer to each. Not one that ``leans`` on the sentence before it,
    unless all do."""
    picked: list[int] = []
    for parts in asked:
        score = _mean(parts)
        if not leans.all():
            score = np.where(leans, -1.0, score)  # relevance is never negative: any sentence read alone comes first
        best = int(np.argmax(score))
        if _fresh(best, picked, similarity):
            picked.append(best)
    return picked


def sentence_parts(instruction: str, pool: Sequence[_Sentence], cosine: np.ndarray) -> list[np.ndarray]:
    """A sentence's own parts of relevance, each 0..1: its cosine with the instruction (clipped at 0, scaled to
    the best), the share of the instruction's keywords it holds (asked, read under its chunk's heading) and, when
    the instruction asks for a quantity, whether it holds a figure. Its chunk's score is the selection's to add. A
    negative cosine is no relevance, and would turn the floor upside down. Read under its heading, a list item
    ("Little Rock AR01 2." under "EPS Geographic Market Name Code > Arkansas (AR)") answers the lookup it is the
    answer to, where alone it held one keyword of six and lost to a line that echoes the question."""
    own = cosine / max(float(cosine.max()), 1e-6)
    query = list(dict.fromkeys(terms(keyword_query(instruction))))
    held = [set(terms(f"{s.heading}\n{s.text}")) for s in pool]
    idf = local_idf(query, held)
    parts = [own, np.array([coverage(query, idf, t) for t in held])]
    if asks_for_quantity(instruction):
        parts.append(np.array([holds_figure(s.text) for s in pool], float))
    return parts


def _mean(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Equal parts."""
    return sum(parts) / len(parts)


def holds_figure(sentence: str) -> bool:
    """A number other than a year: what a question asking "how much" or "what ratio" is answered by."""
    return any(t[0].isdigit() and not is_year(t) for t in tokens(sentence))


def _fresh(index: int, picked: Sequence[int], similarity: np.ndarray) -> bool:
    """Not a near-repeat of a sentence already picked."""
    return all(similarity[index, other] < REDUNDANCY for other in picked)
