"""Hybrid retrieval: dense vector search and full-text (BM25) search, restricted to documents, fused.

``retrieve(store, embedder, query, k=..., document_ids=...)`` returns ``k`` candidates, best first, then their
pages' other chunks that the searches found (page mates, step 5):

1. **Query views.** The question as written, its keywords (request words such as "assume", "round",
   "answer" and English stop words removed; letters and digits only, so nothing reaches the
   full-text query parser), and, when the question has several sentences or clauses (split at ";" and
   ":" too), each one's keywords.
   All are embedded in one model call; the keywords are also the full-text query.
2. **Searches.** One vector search per view and one BM25 search, each ``6k`` deep, each
   prefiltered to the chosen documents (``document_id IN (...)``, a BTREE-indexed column).
3. **Fusion.** Plain reciprocal-rank fusion (constant 60) over all those lists: the BM25 list is one
   voice among three to five, which is why it no longer drags dense hits out as two-list RRF does.
4. **Page round-robin.** The best chunk of every page first, then second-best chunks, and so on:
   chunks of one page are neighbours that rarely add what the best one lacks, and evidence is cited
   by page, so spreading k over more pages covers more evidence.
5. **Page mates.** The other chunks of those pages found by any search, after the ``k``, each marked: the
   reranker chooses pages among the ``k`` and may quote a page's mate in its place (a statement split over a
   page's chunks holds the row asked for in one of them, not always the one the searches ranked first).

No weight was fitted: the RRF constant is the customary one, the depth a round multiple of k.

Measured (first correct chunk within the top k of the candidate list; hit@k and MRR), FinanceBench
as the development set (59 questions, 29 filings of about 650 chunks) and MMLongBench-Doc as a
held-out check (163 answerable questions, 22 documents of about 150 chunks), lists 200 deep unless said:

| method | FB @5 | @10 | @20 | @50 | MRR | MMLB @5 | @10 | @20 | @50 | MRR |
|---|---|---|---|---|---|---|---|---|---|---|
| dense, question as written | .53 | .64 | .76 | .86 | .38 | .72 | .81 | .87 | .91 | .56 |
| dense, keyword query | .61 | .71 | .78 | .92 | .46 | .69 | .80 | .88 | .91 | .55 |
| BM25, question (punctuation stripped) | .36 | .39 | .56 | .69 | .26 | .73 | .81 | .84 | .88 | .60 |
| BM25, keyword query | .44 | .51 | .61 | .68 | .29 | .72 | .82 | .85 | .88 | .58 |
| plain RRF, dense + BM25 | .56 | .63 | .73 | .83 | .43 | .77 | .86 | .90 | .95 | .62 |
| weighted RRF, BM25 x0.3 | .61 | .68 | .75 | .88 | .45 | .76 | .83 | .89 | .94 | .60 |
| convex min-max combination, 0.8 dense | .59 | .66 | .76 | .88 | .46 | .77 | .83 | .88 | .93 | .59 |
| union, dense top 35 + BM25 top 15 | .53 | .64 | .76 | .86 | .38 | .72 | .81 | .87 | .93 | .56 |
| dense + page round-robin | .56 | .71 | .83 | .93 | .40 | .77 | .85 | .91 | .98 | .58 |
| RRF of all views, no round-robin | .66 | .75 | .78 | .92 | .50 | .75 | .83 | .90 | .95 | .60 |
| max-rank fusion of all views + round-robin | .61 | .71 | .81 | .92 | .44 | .81 | .86 | .92 | .96 | .63 |
| chosen, lists 100 deep | .64 | .73 | .85 | .93 | .48 | .78 | .87 | .94 | .98 | .61 |
| **chosen: RRF of all views + page round-robin** | .68 | .75 | .88 | .97 | .51 | .79 | .87 | .94 | .98 | .61 |
| chosen without BM25 | .64 | .76 | .86 | .98 | .46 | .78 | .85 | .91 | .98 | .58 |
| chosen without sentence views | .64 | .73 | .83 | .93 | .47 | .79 | .87 | .94 | .98 | .62 |

One FinanceBench question is 1.7 points: differences of a question or two are noise. What held on
both sets: the page round-robin (+5 to +7 at 50), keyword views for the financial questions' long
instructions, and BM25 for top ranks and MRR. Plain two-list RRF lost to dense on the filings (.83
against .86), as the issue reported, and won on the shorter MMLongBench documents.
"""

from __future__ import annotations

import re
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from citesum.tasks.embed import Embedder
from citesum.tasks.store.lance import LanceStore, sql_string
from citesum.tasks.store.schema import chunk_of
from citesum.tasks.summarize.evidence import Candidate
from citesum.tasks.text import STOPWORDS, sentences, words

# Words that phrase a request rather than name its topic ("Assume that you are an analyst...
# answer in USD millions, round to two decimal places"). They match chunks at random: in
# lexical search they only add noise.
REQUEST_WORDS = frozenset(
    """answer answers answering question questions assume assuming analyst analysts give respond response relying
    rely primarily mainly information info shown show shows provided provide using use used based base judgment
    judgments judgement details detail calculate calculated calculation compute computed round rounded rounding
    decimal decimals place places unit units express expressed please explain state reference referencing refer
    consider considering following defined define definition mean means whether""".split()
)

_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


def keyword_query(question: str) -> str:
    """The question as a plain full-text query: topic words only, no syntax.

    Only letters and digits survive, so quotes, colons, brackets or operators in a
    question cannot reach the query parser. A word mixing letters and digits also
    contributes its parts ("FY2018" adds "FY" and "2018": filings write the year
    alone); single characters are dropped as too unspecific.
    """
    # The full-text index drops its own stop words too; dropping them here first means a question
    # made only of them yields no query rather than a useless one.
    kept = []
    for word in words(question):
        for term in (word, *_LETTER_DIGIT.split(word)):
            if len(term) > 1 and term.lower() not in STOPWORDS and term.lower() not in REQUEST_WORDS:
                kept.append(term)
    return " ".join(dict.fromkeys(kept))  # first occurrence order, no repeats


# A question asking for a quantity: answered by a figure, so a figure and a table row are signals for it.
_QUANTITY = re.compile(
    r"\bhow (much|many|long|old|far|large|big)\b|\b(amount|ratio|rate|percent(age)?|number of|total|average|sum|count)\b"
    r"|%|\bin (usd|\$|dollars|millions|billions|thousands|percent)\b|\bround\b",
    re.IGNORECASE,
)


def asks_for_quantity(question: str) -> bool:
    """True for "how many ...", "what ratio ...", "... in millions", "round ...": the answer is a figure."""
    return _QUANTITY.search(question) is not None


# Where a question asks a second thing: "and" or ";" before a question word ("... fees and when are invoices due?").
# A comma is not one: it mostly ends a preamble ("According to the report, what ...").
_SECOND_QUESTION = re.compile(
    r"\s*(?:;|\band\b)\s+(?=(?:what|when|how|who|whom|whose|which|where|why|whether)\b)", re.IGNORECASE
)


def question_parts(question: str) -> list[str]:
    """The things a question asks, each as its own question: ``["How much are the fees", "when are invoices
    due?"]``; a question that asks one thing is its only part."""
    return [part for part in _SECOND_QUESTION.split(question) if part.strip()]


def document_filter(document_ids: Sequence[str] | None) -> str | None:
    """SQL prefilter on document ids; None = the whole store."""
    if document_ids is None:
        return None
    if not document_ids:
        raise ValueError("document_ids is empty: give None for the whole store")
    return f"document_id IN ({', '.join(map(sql_string, document_ids))})"


def chunk_filter(chunk_ids: Sequence[str], *, exclude: bool = False) -> str:
    """SQL filter to these chunks (or, with ``exclude``, to every other chunk)."""
    return f"chunk_id {'NOT IN' if exclude else 'IN'} ({', '.join(map(sql_string, chunk_ids))})"


def both(*filters: str | None) -> str | None:
    """The filters joined with AND; None when there is none."""
    kept = [f"({f})" for f in filters if f]
    return " AND ".join(kept) or None


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
    parts = [keyword_query(s) for s in sentences(question, clauses=True)]
    parts = [p for p in parts if p]
    texts = [question, keywords, *(parts if len(parts) > 1 else [])]
    return QueryViews(tuple(dict.fromkeys(t for t in texts if t.strip())) or (question,), keywords)


_QUERY_VECTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
QUERY_CACHE_SIZE = 256
# Retrieval tasks are mapped over threads: the cache and torch's thread setting are shared state.
_QUERY_LOCK = threading.Lock()
_TORCH_THREADS_LOCK = threading.Lock()


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Query vectors, remembered per embedder for the last few hundred texts.

    Retrieval and the reranker both need the question's vector, and on a busy 2-core machine one
    model call can cost a large share of the latency budget; one call serves both.
    """
    if not texts:
        return np.zeros((0, embedder.dimension), np.float32)
    with _QUERY_LOCK:
        try:
            cache = _QUERY_VECTORS.setdefault(embedder, OrderedDict())
        except TypeError:  # an embedder that cannot be weakly referenced is simply not cached
            cache = OrderedDict()
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            with one_torch_thread():
                cache.update(zip(missing, embedder.embed(missing), strict=True))
        vectors = np.stack([cache[t] for t in texts])
        for text in texts:
            cache.move_to_end(text)
        while len(cache) > QUERY_CACHE_SIZE:
            cache.popitem(last=False)
    return vectors


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run a few short texts through torch on one intra-op thread, then restore the setting.

    On this 2-core machine shared with other work, torch's two OpenMP threads wait on each other:
    three short queries took 0.75 s median with two threads and 0.08 s with one (load average 4).
    A query batch is too small to gain from a second thread anyway. torch is only touched if the
    embedder already imported it. The setting is process-wide: an ingestion batch embedded in
    another thread at that moment runs on one thread too, slower but correct.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    with _TORCH_THREADS_LOCK:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def pool_depth(k: int) -> int:
    """How deep each ranked list goes: six times the candidates.

    Fusion needs a chunk's rank in every list that finds it, and the page round-robin needs
    more than k chunks to fill k pages; 2k measured worse than 4k (see the module docstring).
    With tables as rows a filing's table chunks, each repeating its column headers (years), fill
    the top of the keyword views, and at 4k a page the lists rank just past the cut got no votes:
    candidate hit@50 / evidence hit@8 at 4k, 5k, 6k and 8k, FinanceBench .966/.847, .983/.864,
    .983/.864, .983/.847; MMLongBench-Doc .981/.907, .981/.901, .981/.907, .981/.907 (2026-12-02).
    6k costs about 12 ms a question over 4k (median 59 ms against 47 ms, FinanceBench, vectors cached).
    """
    return max(6 * k, 40)


def retrieve(
    store: LanceStore,
    embedder: Embedder,
    query: str,
    *,
    k: int,
    document_ids: Sequence[str] | None = None,
    where: str | None = None,
) -> list[Candidate]:
    """The ``k`` best chunks for ``query`` in these documents (None = all), best first.

    ``where``: a further SQL filter, e.g. ``chunk_filter`` to search one section's chunks.
    """
    views = query_views(query)
    where = both(document_filter(document_ids), where)
    depth = pool_depth(k)
    vectors = embed_queries(embedder, views.dense)
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
    ranked = sorted(fused.values(), key=lambda h: -h.score)
    ordered = page_round_robin(ranked)[:k]
    chosen = [candidate_of(h.row, i, h.score, h.dense_rank, h.lexical_rank) for i, h in enumerate(ordered, 1)]
    return chosen + page_mates(ranked, ordered)


def page_mates(ranked: Sequence[_Fused], kept: Sequence[_Fused]) -> list[Candidate]:
    """The other chunks of the kept candidates' pages that the lists found, in fused order, each with its fused rank.

    The round-robin keeps one chunk a page, the one the lists liked best, and a statement set over a page in five
    chunks is then represented by the one whose words match best, not the one holding the row asked for (Best Buy's
    balance sheet by its property rows, for "the total amount of inventories"). The reranker chooses pages as
    before and may quote a page mate that fits the question better in its page's place (``rerank.LocalReranker``).
    """
    pages = {_page(h) for h in kept}
    ids = {h.row["chunk_id"] for h in kept}
    return [
        replace(candidate_of(h.row, i, h.score, h.dense_rank, h.lexical_rank), page_mate=True)
        for i, h in enumerate(ranked, 1)
        if _page(h) in pages and h.row["chunk_id"] not in ids
    ]


def _page(hit: _Fused) -> tuple[str, int]:
    return hit.row["document_id"], hit.row["page_start"]


def page_round_robin(ranked: Sequence[_Fused]) -> list[_Fused]:
    """The best chunk of every page first (in fused order), then every page's second best, and so on.

    A page's chunks are near neighbours and rarely add a fact the best one lacks, while a page's
    evidence is all that a citation needs: spreading the candidates over more pages covers more
    evidence. Nothing is dropped, so a short document keeps all its chunks.
    """
    seen: dict[tuple[str, int], int] = {}
    keyed = []
    for position, hit in enumerate(ranked):
        page = _page(hit)
        seen[page] = seen.get(page, 0) + 1
        keyed.append((seen[page], position, hit))
    return [hit for _, _, hit in sorted(keyed, key=lambda t: t[:2])]


def candidate_of(row: dict, rank: int, score: float, dense_rank: int | None, lexical_rank: int | None) -> Candidate:
    """A stored chunk row as a candidate; a row read without its vector gives a candidate without one."""
    vector = row.get("vector")
    return Candidate(
        chunk=chunk_of(row),
        rank=rank,
        score=score,
        dense_rank=dense_rank,
        lexical_rank=lexical_rank,
        vector=None if vector is None else np.asarray(vector, np.float32),
    )
