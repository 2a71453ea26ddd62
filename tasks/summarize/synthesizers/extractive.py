"""The extractive synthesizer: verbatim sentences of the evidence, each cited.

It never writes text of its own. For each request it picks the sentences that
are most relevant to the instruction and most central to the evidence, skipping
near-repeats and sentences far less relevant than the best, and cites the chunk
each came from. A sentence over ``MAX_WORDS`` (common in contracts) is quoted by
its clauses instead: verbatim spans split at ";", ":" and item markers such as
"(a)", each a candidate of its own; a clause still over the cap is left out.
A table row is quoted as its finding, its label and each value under its column's
name ("Total debt: 2018 $14,622; 2017 $13,949"); validation checks it against the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citesum.tasks.embed import Embedder
from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.tables import row_cells, row_findings
from citesum.tasks.text import normalize_space, sentences, split_sentences, table_rows, tokens

MIN_WORDS = 6  # shorter pieces are headings, table cells or fragments, not statements
MAX_WORDS = 80  # longer "sentences" are split into clauses: run-on table rows, lists, contract clauses
RELEVANCE_WEIGHT = 0.7  # against centrality: the instruction matters more than the evidence's own centre
CHUNK_WEIGHT = 0.5  # of a sentence's relevance that comes from its chunk's rerank score (the rest: its own)
REDUNDANCY = 0.85  # similarity above which a sentence repeats one already chosen
RELEVANCE_FLOOR = 0.5  # share of the best sentence's relevance a sentence needs to be kept


@dataclass(frozen=True)
class _Sentence:
    text: str  # whitespace-normalised, otherwise verbatim
    citations: tuple[str, ...]
    order: int  # evidence rank, then position in the chunk
    prior: float = 1.0  # the chunk's rerank score, scaled to 0..1 within the evidence


def evidence_sentences(evidence: Sequence[Evidence]) -> list[_Sentence]:
    """Every statement-like sentence of the evidence, once, with the label of its first chunk."""
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
                if not MIN_WORDS <= word_count(sentence) <= MAX_WORDS or sentence.lower() in seen:
                    continue
                seen.add(sentence.lower())
                found.append(_Sentence(sentence, (item.label,), len(found), float(prior)))
    return found


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
        pool = evidence_sentences(request.evidence)
        return self._draft(self._select(request.instruction, pool, request.max_sentences))

    def merge(self, request: MergeRequest) -> Draft:
        """The most relevant and central of the points, verbatim, with their citations."""
        pool = [_Sentence(p.text, p.citations, i) for i, p in enumerate(request.points)]
        return self._draft(self._select(request.instruction, pool, request.max_sentences))

    @staticmethod
    def _draft(chosen: list[_Sentence]) -> Draft:
        sentences = tuple(CitedSentence(s.text, s.citations) for s in chosen)
        raw = "\n".join(f"- {s.text} " + "".join(f"[{c}]" for c in s.citations) for s in sentences)
        return Draft(sentences=sentences, raw=raw)

    def _select(self, instruction: str, pool: list[_Sentence], limit: int) -> list[_Sentence]:
        if not pool:
            return []
        vectors = self._embedder.embed([instruction] + [s.text for s in pool])
        query, rows = vectors[0], vectors[1:]
        similarity = rows @ rows.T
        centrality = (similarity.sum(axis=1) - 1.0) / max(len(pool) - 1, 1)
        # A sentence of a chunk the reranker judged weak needs to be very relevant on its own.
        # Clipped at 0: a negative cosine is no relevance, and would turn the floor below upside down.
        own = np.clip(rows @ query, 0.0, None)
        prior = np.array([s.prior for s in pool])
        relevance = (1 - CHUNK_WEIGHT) * own / max(float(own.max()), 1e-6) + CHUNK_WEIGHT * prior
        score = RELEVANCE_WEIGHT * relevance + (1 - RELEVANCE_WEIGHT) * centrality
        # Off-topic sentences of a selected chunk stay out even when the section has room.
        score[relevance < RELEVANCE_FLOOR * relevance.max()] = -np.inf
        picked = _pick_non_redundant(score, similarity, limit)
        # Reading order within the section: evidence rank, then position in its chunk.
        return sorted((pool[i] for i in picked), key=lambda s: s.order)


def _pick_non_redundant(score: np.ndarray, similarity: np.ndarray, limit: int) -> list[int]:
    """Best-scoring sentences, skipping any too similar to one already picked."""
    picked: list[int] = []
    for index in np.argsort(-score, kind="stable"):
        if len(picked) == limit or score[index] == -np.inf:
            break
        if all(similarity[index, other] < REDUNDANCY for other in picked):
            picked.append(int(index))
    return picked
