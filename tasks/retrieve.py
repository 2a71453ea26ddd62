"""Hybrid retrieval: dense vector search and full-text (BM25) search, restricted to documents, fused.

DRAFT
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tasks.embed import Embedder
from tasks.evidence import Candidate
from tasks.store import LanceStore, sql_string

# English function words. The full-text index drops its own stop words too; these go
# first so a question made only of them yields no query rather than a useless one.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves""".split()
)

# Words that phrase a request rather than name its topic ("Assume that you are an analyst...
# answer in USD millions, round to two decimal places"). They match chunks at random: in
# lexical search they only add noise.
REQUEST_WORDS = frozenset(
    """answer answers answering question questions assume assuming analyst analysts give respond response relying
    rely primarily mainly information info shown show shows provided provide using use used based base judgment
    judgments judgement details detail calculate calculated calculation compute computed round rounded rounding
    decimal decimals place places unit units express expressed please explain state reference referencing refer
    consider considering following defined define definition mean means also may might whether""".split()
)

_TOKEN = re.compile(r"[^\W_]+")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


def keyword_query(question: str) -> str:
    """The question as a plain full-text query: topic words only, no syntax.

    Only letters and digits survive, so quotes, colons, brackets or operators in a
    question cannot reach the query parser. A word mixing letters and digits also
    contributes its parts ("FY2018" adds "FY" and "2018": filings write the year
    alone); single characters are dropped as too unspecific.
    """
    kept = []
    for word in _TOKEN.findall(question):
        for term in (word, *_LETTER_DIGIT.split(word)):
            if len(term) > 1 and term.lower() not in STOPWORDS and term.lower() not in REQUEST_WORDS:
                kept.append(term)
    return " ".join(dict.fromkeys(kept))  # first occurrence order, no repeats


def document_filter(document_ids: Sequence[str] | None) -> str | None:
    """SQL prefilter on document ids; None = the whole store."""
    if document_ids is None:
        return None
    if not document_ids:
        raise ValueError("document_ids is empty: give None for the whole store")
    return f"document_id IN ({', '.join(map(sql_string, document_ids))})"


_SENTENCE = re.compile(r"(?<=[.?!;:])\s+")
RRF_CONSTANT = 60  # the usual constant of reciprocal-rank fusion (Cormack et al., 2009); not tuned here


@dataclass(frozen=True)
class QueryViews:
    """What one question is searched with: texts to embed and one full-text query."""

    dense: tuple[str, ...]
    lexical: str


def query_views(question: str) -> QueryViews:
    """The question as written, its keywords, and the keywords of each sentence when there are several.

    Long questions mix the request ("Round your answer...") with one or more topics ("revenue ...
    shown in the statement of income and the cash flow statement"); embedding the keywords alone
    and each sentence's keywords lets each topic find its own page.
    """
    keywords = keyword_query(question)
    sentences = [keyword_query(s) for s in _SENTENCE.split(question.strip())]
    sentences = [s for s in sentences if s]
    texts = [question, keywords, *(sentences if len(sentences) > 1 else [])]
    return QueryViews(tuple(dict.fromkeys(t for t in texts if t.strip())) or (question,), keywords)


def pool_depth(k: int) -> int:
    """How deep each search goes: twice the candidates, so the page round-robin can fill k."""
    return max(2 * k, 20)


def retrieve(
    store: LanceStore, embedder: Embedder, query: str, *, k: int, document_ids: Sequence[str] | None = None
) -> list[Candidate]:
    """The ``k`` best chunks for ``query`` in these documents (None = all), best first."""
    views = query_views(query)
    where = document_filter(document_ids)
    depth = pool_depth(k)
    vectors = embedder.embed(list(views.dense))
    dense = [store.search_vector(v, k=depth, where=where) for v in vectors]
    lexical = store.search_text(views.lexical, k=depth, where=where) if views.lexical else []
    return fuse(dense, lexical, k)


def dense_candidates(
    store: LanceStore, vector: np.ndarray, *, k: int, document_ids: Sequence[str] | None = None
) -> list[Candidate]:
    """Plain vector search, as candidates: the baseline the hybrid search is measured against."""
    rows = store.search_vector(vector, k=k, where=document_filter(document_ids))
    return [candidate_of(row, i, _cosine(row, vector), i, None) for i, row in enumerate(rows, 1)]


def _cosine(row: dict, vector: np.ndarray) -> float:
    return float(np.dot(np.asarray(row["vector"], np.float32), vector))


# -- fusion --------------------------------------------------------------------------------


@dataclass
class _Fused:
    row: dict
    score: float = 0.0
    dense_rank: int | None = None  # best rank over the dense query views
    lexical_rank: int | None = None


def fuse(dense: Sequence[Sequence[dict]], lexical: Sequence[dict], k: int) -> list[Candidate]:
    """Reciprocal-rank fusion of every ranked list, then one chunk per page at a time.

    Each list (one per dense query view, one full-text) votes 1 / (60 + rank) for its chunks.
    """
    fused: dict[str, _Fused] = {}
    for ranked in dense:
        for rank, row in enumerate(ranked, 1):
            hit = fused.setdefault(row["chunk_id"], _Fused(row))
            hit.score += 1 / (RRF_CONSTANT + rank)
            hit.dense_rank = rank if hit.dense_rank is None else min(hit.dense_rank, rank)
    for rank, row in enumerate(lexical, 1):
        hit = fused.setdefault(row["chunk_id"], _Fused(row))
        hit.score += 1 / (RRF_CONSTANT + rank)
        hit.lexical_rank = rank
    ordered = page_round_robin(sorted(fused.values(), key=lambda h: -h.score))[:k]
    return [candidate_of(h.row, i, h.score, h.dense_rank, h.lexical_rank) for i, h in enumerate(ordered, 1)]


def page_round_robin(ranked: Sequence[_Fused]) -> list[_Fused]:
    """The best chunk of every page first (in fused order), then every page's second best, and so on.

    A page's chunks are near neighbours and rarely add a fact the best one lacks, while a page's
    evidence is all that a citation needs: spreading the candidates over more pages covers more
    evidence. Nothing is dropped, so a short document keeps all its chunks.
    """
    seen: dict[tuple[str, int], int] = {}
    keyed = []
    for position, hit in enumerate(ranked):
        page = (hit.row["document_id"], hit.row["page_start"])
        seen[page] = seen.get(page, 0) + 1
        keyed.append((seen[page], position, hit))
    return [hit for _, _, hit in sorted(keyed, key=lambda t: t[:2])]


def candidate_of(row: dict, rank: int, score: float, dense_rank: int | None, lexical_rank: int | None) -> Candidate:
    return Candidate(
        chunk_id=row["chunk_id"],
        document_id=row["document_id"],
        version=row["version"],
        source=row["source"],
        page_start=row["page_start"],
        page_end=row["page_end"],
        heading=row["heading"],
        text=row["text"],
        ordinal=row["ordinal"],
        rank=rank,
        score=score,
        dense_rank=dense_rank,
        lexical_rank=lexical_rank,
        vector=np.asarray(row["vector"], np.float32),
    )
