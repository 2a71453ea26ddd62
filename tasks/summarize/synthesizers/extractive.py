"""The extractive synthesizer: verbatim sentences of the evidence, each cited.

It never writes text of its own. Each sentence of the evidence gets a relevance to the
instruction: its cosine with it, the share of the instruction's keywords it holds (IDF
over the sentences, as the reranker weighs chunks) and its chunk's rerank score, in equal
parts; when the instruction asks for a quantity (``asks_for_quantity``: "how many", "what ratio",
"in millions", "round ..."), holding a figure (a number other than a year) is a fourth equal
part. Sentences far less relevant than the best are left out. A piece under ``MIN_WORDS``
is a candidate only when it holds one of the instruction's keywords (a lookup's answer:
"Little Rock AR01 2." for "the market name for code AR01"). The summary first takes the
evidence's best match to the instruction, judged sentence by sentence (the same parts less
its chunk's score: an answer in a chunk the reranker ranked low is still quoted; for a question
asking two things, ``question_parts``, the best match to each), then the
best sentence of each other of the first ``COVER`` evidence chunks, in rank order, when its own
cosine is near the best sentence's (``COVER_COSINE``: a chunk the reranker liked for its
heading alone gives nothing), and up to ``EXTRA`` more by relevance, skipping near-repeats;
each sentence cites the chunk it came from. A sentence over ``MAX_WORDS`` (common in
contracts) is quoted by its clauses instead: verbatim spans split at ";", ":" and item
markers such as "(a)", each a candidate of its own; a clause still over the cap is left out.
A table row is quoted as its finding, its label and each value under its column's name
("Total debt: 2018 $14,622; 2017 $13,949"); validation checks it against the row.

How the selection was chosen: the evidence of every development question (FinanceBench 59,
MMLongBench-Doc 209) was computed once and each variant scored with ``citesum eval
--summaries``'s figures, against lead (the first sentence of each chunk) cut to the same
length. Cited-page precision / gold-page recall / short answer found:

| selection | FinanceBench | MMLongBench-Doc |
|---|---|---|
| before: best 5 by relevance (own cosine and chunk score) with centrality (0.3) | .233 / .593 / .095 | .416 / .667 / .222 |
| the same, keywords in the relevance, no centrality | .233 / .593 / .095 | .409 / .704 / .235 |
| best of the first 4 chunks + 1 more, floor 0.5 | .221 / .661 / .095 | .352 / .728 / .272 |
| the same, first 3 chunks + 1 | .228 / .593 / .095 | .373 / .698 / .235 |
| the same, first 5 chunks + 1 (up to 6 sentences) | .201 / .695 / .095 | .340 / .759 / .272 |
| first 4 + 1, floor 0.6 | .243 / .644 / .095 | .377 / .691 / .241 |
| first 4 + 1, floor 0.6, cover cosine 0.7 | .256 / .627 / .095 | .392 / .685 / .241 |
| the same, cover cosine 0.9 | .279 / .492 / .048 | .442 / .623 / .179 |
| lead, cut to the chosen selection's length | .213 / .644 / .095 | .322 / .716 / .198 |
| LexRank, the same | .180 / .492 / .095 | .243 / .519 / .148 |

Then again with tables as rows (stores re-chunked; rows are findings of their own), the
same three figures, lead beside each:

| selection | FinanceBench (lead) | MMLongBench-Doc (lead) |
|---|---|---|
| first 4 + 1, floor 0.6, cover cosine 0.7 | .260 / .610 / .048 (.210 / .695 / .000) | .377 / .679 / .216 (.316 / .710 / .136) |
| first 4 + 1, floor 0.5, cover cosine 0.7 (chosen) | .247 / .661 / .095 (.194 / .712 / .000) | .360 / .716 / .228 (.307 / .728 / .142) |
| first 4 + 1, floor 0.5, cover cosine 0.6 | .240 / .678 / .095 (.183 / .712 / .000) | .343 / .741 / .241 (.299 / .765 / .148) |
| first 4 + 1, floor 0.5, no cover cosine | .240 / .695 / .095 (.184 / .729 / .000) | (not run) |

Then with question types (the same evidence, tables as rows; same three figures, lead beside each):

| selection | FinanceBench (lead) | MMLongBench-Doc (lead) |
|---|---|---|
| before (first 4 + 1, floor 0.5, cover cosine 0.7) | .252 / .661 / .095 (.194 / .695 / .000) | .363 / .716 / .222 (.310 / .728 / .142) |
| a figure as a fourth part for quantity questions | .246 / .678 / .095 (.193 / .695 / .000) | .362 / .716 / .235 (.312 / .728 / .136) |
| short pieces (2-5 words) naming a keyword kept | .250 / .661 / .095 (.193 / .695 / .000) | .371 / .741 / .222 (.313 / .735 / .142) |
| both (chosen) | .244 / .678 / .095 (.191 / .695 / .000) | .370 / .741 / .235 (.315 / .735 / .136) |
| both, figure weighed 0.75 | .251 / .678 / .095 (.190 / .695 / .000) | .366 / .741 / .241 (.314 / .735 / .142) |
| both, and a year the question names as a signal (0.5) | .259 / .695 / .095 (.193 / .695 / .000) | .370 / .741 / .228 (.314 / .735 / .136) |
| both, and the question's keywords in a row finding's label | .241 / .678 / .095 (.192 / .695 / .000) | .370 / .741 / .235 (.315 / .735 / .136) |

Then how many sentences, with both (the baselines are cut to each row's length):

| selection | FinanceBench (lead) | MMLongBench-Doc (lead) |
|---|---|---|
| first 4 + 0 | .225 / .678 / .095 (.235 / .678 / .000) | .355 / .698 / .210 (.352 / .698 / .105) |
| first 4 + 1 | .244 / .678 / .095 (.191 / .695 / .000) | .370 / .741 / .235 (.315 / .735 / .136) |
| first 4 + 2 (chosen) | .256 / .695 / .095 (.181 / .729 / .000) | .374 / .747 / .247 (.283 / .772 / .148) |
| first 4 + 3 | .264 / .695 / .095 (.178 / .729 / .000) | .377 / .753 / .253 (.280 / .809 / .154) |
| first 3 + 1 | .271 / .610 / .095 (.217 / .678 / .000) | .390 / .716 / .222 (.328 / .716 / .123) |
| first 3 + 2 | .286 / .644 / .095 (.188 / .729 / .000) | .391 / .728 / .235 (.291 / .759 / .142) |
| first 5 + 1 | .232 / .678 / .095 (.190 / .712 / .000) | .359 / .772 / .247 (.298 / .753 / .136) |
| first 5 + 2 | .248 / .695 / .095 (.182 / .729 / .000) | .362 / .772 / .253 (.286 / .796 / .154) |
| first 4 + 2, cover cosine 0.75 | .257 / .661 / .095 (.186 / .729 / .000) | .386 / .747 / .247 (.284 / .759 / .142) |

"4 + 2" raises each of citesum's three figures on both sets over "4 + 1" (about 4.8 and 4.3
sentences a summary, from 4.2 and 3.5) and its precision lead over lead (5.3 -> 7.5 and 5.5 -> 9.1
points), mostly because lead's added sentences come from lower-ranked chunks; lead's recall gains
more than citesum's (the recall gap to lead grows from 1.7 to 3.4 and from -0.6 to 2.5 points).
"4 + 3" lets LexRank's answer found rise (MMLongBench .179). A summary as long as lead's cannot cite
gold pages 10 points more often than lead's one-per-chunk does; these rows trade precision for recall.

FinanceBench's answers are mostly computed (ratios, growth rates): only 3 of its 21 figures appear
verbatim in any evidence sentence, so its answer found cannot pass 2 or 3 of 21 extractively.

The chosen row is the one closest to lead on recall while ahead of it by about five points on
precision and nine on answer found; without the cover cosine the summary cites clauses of
chunks ranked high only for a heading word (the sample agreement's "3 Customer Obligations"
for "termination obligations").

Then the cover cosine again, over the evidence of the reranker's table signal (21a2b3a: more table
chunks among the first four), first 4 + 2 (the same three figures, lead beside each):

| cover cosine | FinanceBench (lead) | MMLongBench-Doc (lead) |
|---|---|---|
| 0.7 (before) | .281 / .746 / .095 (.189 / .780 / .000) | .386 / .741 / .241 (.296 / .772 / .148) |
| 0.725 | .281 / .746 / .095 (.191 / .780 / .000) | .391 / .741 / .241 (.294 / .765 / .142) |
| 0.75 (chosen) | .289 / .746 / .095 (.196 / .780 / .000) | .401 / .741 / .241 (.299 / .765 / .142) |
| 0.775 | .298 / .729 / .095 (.205 / .780 / .000) | .402 / .728 / .235 (.307 / .759 / .142) |
| 0.8 | .305 / .695 / .095 (.214 / .763 / .000) | .403 / .722 / .241 (.313 / .759 / .142) |
| 0.75, first 4 + 3 | .293 / .746 / .095 (.186 / .780 / .000) | .391 / .753 / .247 (.286 / .796 / .148) |

0.75 raises citesum's precision on both sets and loses no recall or answer; above it recall falls.
"4 + 3" would put citesum's precision 10 points ahead of lead's on both sets, mostly by lengthening
lead into lower-ranked chunks, while lead's recall pulls further ahead: not taken.

Then the best match first (2026-12-02, fresh stores of both sets ingested at d811ecb on a machine
without AMX, so OpenVINO ran fp32; each question's evidence cached; the same three figures, lead
beside each; LexRank's answer found .048 and .154 in every row). Before it, the best sentence of
a 5th to 8th chunk lost to the first chunk's lesser ones: for "According to table II, which are
the datasets that has exactly three methods?" the opening of Table II (5th chunk, pp. 12-13, the
gold page 13) ranked 7th by relevance, behind five sentences of the first chunk about tables in
general and one of the second:

| selection | FinanceBench (lead) | MMLongBench-Doc (lead) |
|---|---|---|
| before (first 4 + 2, cover cosine 0.75) | .290 / .729 / .095 (.193 / .763 / .000) | .398 / .741 / .241 (.295 / .765 / .142) |
| best match by its own relevance, covering its chunk (chosen) | .283 / .729 / .095 (.191 / .763 / .000) | .399 / .759 / .241 (.294 / .778 / .148) |
| the same, its chunk still giving a cover sentence | .287 / .729 / .095 (.184 / .763 / .000) | .406 / .759 / .247 (.289 / .784 / .148) |
| best match by cosine alone, covering its chunk | .284 / .729 / .095 (.189 / .763 / .000) | .392 / .753 / .247 (.291 / .778 / .148) |
| the same, its chunk still giving a cover sentence | .290 / .729 / .095 (.184 / .763 / .000) | .396 / .753 / .253 (.286 / .784 / .148) |
| before, rows of a table never near-repeats of one another | .281 / .729 / .095 (.193 / .763 / .000) | .398 / .741 / .241 (.295 / .765 / .142) |

The chosen row cites a gold page in three more MMLongBench-Doc summaries than before (Table II above
among them), loses none and finds the same answers; on FinanceBench no summary gains or loses its
gold page, and precision falls .290 -> .283 (lead's .193 -> .191). A summary of one chunk still
quotes its best sentence and two more. The rows where the best match's chunk still gives a cover
sentence gain precision mostly by one more sentence from the first chunk (4.8 and 4.5 sentences a
summary, against 4.6 and 4.3), which lengthens lead too. Cosine alone finds one more answer
("Effective income tax rate: 2023 20.7 %", the 5th chunk's row, has the best cosine with "What is
effective tax ratio of Best Buy ...?" but fewer of its words than the first chunk's "current ratio"
sentence), but it drops the keyword and figure signals: a one-sentence answer to "How much revenue
...?" would quote the sentence about revenue, not the one stating it.

The last row came from "how many Domestic stores ...?", whose "Total Domestic segment stores" row
was left out as a near-repeat (cosine 0.91) of the "Total International segment stores" row: rows
share their column names, but exempting them cost FinanceBench precision and found no more answers.
Also measured then and left out: a blank line between a chunk's blocks ending a sentence (unless a
lower-case word follows), for this synthesizer and both baselines, so that a caption or the lines of
a table not recognised as one (the sample agreement's fee schedule) are not quoted with the next
paragraph's first sentence: precision .294 and .411, recall .729 and .747, but MMLongBench-Doc's
answer found fell to .204 (LexRank .123, lead .080), its answers being short blocks ("Produced by:"
/ "Florida Department of Health") that the merge had joined into one quotable piece; and a sentence
repeated in several evidence chunks citing each of them (.283 and .395 precision, recall the same).

Centrality (LexRank's idea) drew the summary to sentences that repeat the evidence's common
theme, not to the answer: dropping it lost nothing. Covering the first chunks trades some
precision for recall: the gold page is the first or second evidence chunk in 33 of the 44
FinanceBench questions whose evidence holds it, and no sentence-level signal tried (own
cosine, keywords, both with the chunk score) put the gold chunk first more often than the
reranker's order did. Lead keeps a recall lead from chunks with no statement-like sentence
(table fragments), which it cites by their first line.
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
from citesum.tasks.tables import is_year, row_cells, row_findings
from citesum.tasks.text import normalize_space, sentences, split_sentences, table_rows, tokens

MIN_WORDS = 6  # shorter pieces are headings, table cells or fragments, not statements
SHORT_WORDS = 2  # ... unless they hold a keyword of the instruction: a lookup's answer ("Little Rock AR01 2.")
MAX_WORDS = 80  # longer "sentences" are split into clauses: run-on table rows, lists, contract clauses
COVER = 4  # the first evidence chunks that each give their best sentence (when it passes the floor)
COVER_COSINE = 0.75  # share of the best sentence's cosine a chunk's best sentence needs to be taken as cover
EXTRA = 2  # sentences taken after those, by relevance alone
REDUNDANCY = 0.85  # similarity above which a sentence repeats one already chosen
RELEVANCE_FLOOR = 0.5  # share of the best sentence's relevance a sentence needs to be kept


@dataclass(frozen=True)
class _Sentence:
    text: str  # whitespace-normalised, otherwise verbatim
    citations: tuple[str, ...]
    order: int  # evidence rank, then position in the chunk
    prior: float = 1.0  # the chunk's rerank score, scaled to 0..1 within the evidence


def evidence_sentences(evidence: Sequence[Evidence], instruction: str = "") -> list[_Sentence]:
    """Every statement-like sentence of the evidence, once, with the label of its first chunk.

    A piece under ``MIN_WORDS`` is kept only when it holds a keyword of ``instruction``."""
    keywords = set(terms(keyword_query(instruction)))
    seen: set[str] = set()
    found: list[_Sentence] = []
    scores = np.array([item.score for item in evidence], float)
    spread = float(scores.max() - scores.min()) if len(scores) else 0.0
    for item in evidence:
        prior = (item.score - scores.min()) / spread if spread > 0 else 1.0
        text = item.text
        rows, row_spans = row_findings(text), set(table_rows(text))
        for start, end in split_sentences(text):
            if (start, end) in row_spans:  # a header or label row is no finding
                row = rows.get(tuple(row_cells(text[start:end])))
                if row is not None and row.lower() not in seen:
                    seen.add(row.lower())
                    found.append(_Sentence(row, (item.label,), len(found), float(prior)))
                continue
            for sentence in quotable(normalize_space(text[start:end])):
                if not _statement(sentence, keywords) or sentence.lower() in seen:
                    continue
                seen.add(sentence.lower())
                found.append(_Sentence(sentence, (item.label,), len(found), float(prior)))
    return found


def _statement(sentence: str, keywords: set[str]) -> bool:
    """Long enough to say something (or short and naming what was asked), short enough to quote."""
    count = word_count(sentence)
    if count < MIN_WORDS:
        return count >= SHORT_WORDS and not keywords.isdisjoint(terms(sentence))
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
        pool = evidence_sentences(request.evidence, request.instruction)
        chunks = [item.label for item in request.evidence]
        return self._draft(self._select(request.instruction, pool, request.max_sentences, cover=chunks[:COVER]))

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
        self, instruction: str, pool: list[_Sentence], limit: int, cover: Sequence[str] = ()
    ) -> list[_Sentence]:
        """Up to ``limit`` sentences. With ``cover`` (a query's or topic's evidence in rank order): the best match
        to the instruction (to each thing it asks) judged sentence by sentence (its chunk's rank aside), the best
        of each chunk in ``cover``, then ``EXTRA`` more by relevance. Without (merging points): by relevance alone."""
        if not pool:
            return []
        asked = question_parts(instruction) if cover else [instruction]
        extra = asked if len(asked) > 1 else []  # each thing a compound question asks, embedded apart
        vectors = self._embedder.embed([instruction, *extra] + [s.text for s in pool])
        query, rows = vectors[0], vectors[1 + len(extra) :]
        similarity = rows @ rows.T
        cosine = np.clip(rows @ query, 0.0, None)
        parts = sentence_parts(instruction, pool, cosine)
        relevance = _mean([*parts, np.array([s.prior for s in pool])])
        near = cosine >= COVER_COSINE * float(cosine.max())
        # Off-topic sentences of a selected chunk stay out even when the section has room.
        relevance[relevance < RELEVANCE_FLOOR * relevance.max()] = -np.inf
        ranked = [int(i) for i in np.argsort(-relevance, kind="stable") if relevance[i] > -np.inf]
        picked: list[int] = []
        if cover:  # the evidence's best match to each thing the question asks, wherever its chunk ranked
            targets = zip(asked, vectors[1 : 1 + len(extra)], strict=True) if extra else [(instruction, query)]
            picked.extend(best_matches(list(targets), pool, rows, similarity)[:limit])
        for label in cover:
            if len(picked) >= limit:
                break
            if any(pool[i].citations[0] == label for i in picked):
                continue  # the best match covers its chunk
            of_chunk = (i for i in ranked if pool[i].citations[0] == label and near[i])
            if (best := next((i for i in of_chunk if _fresh(i, picked, similarity)), None)) is not None:
                picked.append(best)
        if cover:
            limit = min(limit, len(picked) + EXTRA)
        for i in ranked:
            if len(picked) >= limit:
                break
            if i not in picked and _fresh(i, picked, similarity):
                picked.append(i)
        # Reading order within the section: evidence rank, then position in its chunk.
        return sorted((pool[i] for i in picked), key=lambda s: s.order)


def best_matches(
    asked: Sequence[tuple[str, np.ndarray]], pool: Sequence[_Sentence], rows: np.ndarray, similarity: np.ndarray
) -> list[int]:
    """For each question (its text and vector) the sentence that matches it best by its own relevance, unless
    that one repeats a sentence already matched: a question asking two things ("How much are the fees and when
    are invoices due?") gets an answer to each."""
    picked: list[int] = []
    for question, vector in asked:
        best = int(np.argmax(_mean(sentence_parts(question, pool, np.clip(rows @ vector, 0.0, None)))))
        if _fresh(best, picked, similarity):
            picked.append(best)
    return picked


def sentence_parts(instruction: str, pool: Sequence[_Sentence], cosine: np.ndarray) -> list[np.ndarray]:
    """A sentence's own parts of relevance, each 0..1: its cosine with the instruction (clipped at 0, scaled to
    the best), the share of the instruction's keywords it holds and, when the instruction asks for a quantity,
    whether it holds a figure. Its chunk's score is the selection's to add. A negative cosine is no relevance,
    and would turn the floor upside down."""
    own = cosine / max(float(cosine.max()), 1e-6)
    query = list(dict.fromkeys(terms(keyword_query(instruction))))
    held = [set(terms(s.text)) for s in pool]
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
