"""Reranking: choose the evidence for one question from its retrieved candidates.

A ``Reranker`` turns candidates into ``Evidence`` labelled c1..ck; it may only choose among the
candidates it was given (``check_subset`` enforces it for every implementation and raises
``RerankError`` otherwise).

``LocalReranker`` (the default) needs no model beyond the embedding model, and no model call at all
with its default weights (the question's vector comes from retrieval's cache). Each candidate gets
signals, min-max normalised over the candidate set: its retrieval rank (``fusion``), the IDF-weighted
share of the question's keywords in its text (``lexical``) and heading path (``heading``), for a
question asking for a quantity whether it holds table rows (``table``), its cosine with the question
(``dense``), and optionally its best sentence's cosine (``sentence``, which embeds
the sentences of the ``sentence_pool`` best candidates, cached by text). Relevance is their weighted
mean; candidates whose word sets nearly repeat a better one's (Jaccard >= 0.8) are dropped; then MMR
(lambda 0.9, redundancy = cosine of chunk vectors) picks k among the candidates proper. A
page mate (``Candidate.page_mate``: another chunk of a chosen page) then takes its page's place when it scores higher,
the chosen pages' chunks scored together (``with_mates``). On the development sets the evidence keeps its pages;
FinanceBench's summaries quote Best Buy's "total amount of inventories" from its balance sheet's row (answer found
0.095 -> 0.143, every other figure as before), MMLongBench-Doc's gain a question of recall (README, Summary quality).

How the weights were chosen: the signals of the 50 candidates of every FinanceBench question (dev
set) were computed once, then a grid over {0, 0.25, 0.5} per signal, with the fusion weight at 1,
scored evidence hit@8; the round values kept lie in the region that also held on MMLongBench-Doc
(163 answerable questions, not used to pick). Evidence hit@8, FinanceBench / MMLongBench:

| selection | FB | MMLB |
|---|---|---|
| dense-only top 8 (the baseline) | .63 | .79 |
| fused candidate order, top 8 | .75 | .85 |
| one signal alone: dense / lexical / heading / sentence | .64 / .58 / .56 / .51 | .81 / .83 / .74 / .83 |
| fusion + lexical 0.5 + heading 0.5, no MMR | .76 | .88 |
| the same with MMR lambda 0.9 (default) | .75 | .87 |
| the same with MMR lambda 0.5 | .69 | .82 |
| fusion + sentence 0.5 | .69 | .86 |

Also tried, none better than the default on both sets: pseudo-relevance feedback (question vector
moved towards the mean of the top 3-10 candidates; FB .76-.78, MMLB .84-.87), the best rank over the
dense views or the BM25 rank as extra signals (.75-.78 / .84-.87), token-level MaxSim with the
embedding model's token vectors over the top 20 (FB .73-.75; 1.7 s per question), the page's summed
fusion score (no gain). The retrieval rank carries most of the information; keyword coverage helps a
little on both sets.
Later, on the stores with tables as rows (FB .797 / MMLB .870 with the defaults): MMR lambda 1.0
gives .797 / .883, but the summaries written from that evidence cite gold pages less often on
MMLB (.741 -> .735, answer found .235 -> .228), so 0.9 stays; re-weighting lexical, heading and the
dense and full-text ranks over {0.25 .. 1} reaches at most .814 / .870 or .797 / .883; a reference
signal (the question's "Figure 1" or "Table 2" named in the chunk's text) adds one MMLB question
(.877); the question's "page 2" cannot be matched to a chunk, since questions name the printed page
label (page 2 is the PDF's page 6 in one document, page 1 its page 4 in another).
Then the table signal (2026-12-02, the stores of 06a74d9 with tables as rows, each question's 50
candidates cached; ``retrieve.asks_for_quantity`` decides the question kind). Most figures a question
asks for sit in statements and other tables, which the fused order ranked 9th to 14th in most of
MMLongBench-Doc's Best Buy ratio questions. Evidence hit@8 and MRR (final order), FinanceBench / MMLongBench:

| table weight | FB hit@8 | FB MRR | MMLB hit@8 | MMLB MRR |
|---|---|---|---|---|
| 0 (before) | .814 | .563 | .883 | .621 |
| 0.25 | .847 | .583 | .889 | .616 |
| 0.375 (chosen) | .847 | .590 | .907 | .615 |
| 0.5 | .831 | .591 | .914 | .613 |
| 0.75 / 1.0 | .831 / .831 | .599 / .564 | .901 / .889 | .608 / .596 |

The same with the signal "holds at least 3 or 5 rows" or "share of its lines that are rows": the same
figures within one question. The question's keywords in a row's label instead of "holds rows": at
best .847 / .877 or .831 / .895. Summaries written from the 0.375 evidence (``citesum eval
--summaries``' figures on the same cache): cited-page precision .272 -> .281 and .382 -> .386, gold-page
recall .729 -> .746 and .747 -> .741, answer found .048 -> .095 and .241 -> .241; at 0.5 MMLongBench's
recall fell to .728. Also tried as signals, none better than before: a "Figure 2" or "Table 1" the
question names found in the chunk, the question's years in the chunk, its dates ("January 28, 2023").
The best-sentence signal cost about 1.2 s per question here (pool of 8, load average 4) for no gain,
so it is off.
MMR at 0.9 costs one FinanceBench question against no MMR; it is kept so that the synthesizer is
not handed the same fact twice.
Then the document's own name (2026-12-03, the stores of 3035abc, each question's 50 candidates cached). "What was
Best Buy's total revenue ..." asked of Best Buy's 10-K put "Best Buy Mobile" restructuring rows first: the question
names the company, and the chunks that spell its name out score on the lexical signal, while every chunk's heading
holds it in the running "BEST BUY FISCAL 2019 FORM 10-K". Evidence hit@8, then the summaries' cited-page precision /
gold-page recall / answer found (lead's precision and recall in brackets), FinanceBench; MMLongBench-Doc:

| variant | FB | MMLB |
|---|---|---|
| before | .864, .289 / .729 / .095 (.205 / .797) | .907, .394 / .753 / .247 (.307 / .778) |
| IDF over text and heading together | .864, .294 / .729 / .095 (.206 / .797) | .907, .392 / .753 / .247 (.306 / .778) |
| question words in the heading of over half the candidates left out of both signals | .864, .312 / .729 / .095 (.216 / .814) | .914, .391 / .759 / .253 (.307 / .778) |
| the same, over three quarters | .864, .295 / .712 / .048 (.210 / .814) | .914, .397 / .759 / .247 (.305 / .784) |
| the same, over nine tenths (only the document's name: "Best Buy", "fiscal 2023", "Boeing") | .864, .292 / .712 / .048 (.207 / .797) | .914, .397 / .759 / .247 (.308 / .784) |

At one half the words left out are also a section's own ("guidance", "director", "terrorism", "separation": the
candidates crowd into the section that answers); at nine tenths, where only the document's name goes, FinanceBench
loses a gold page and a figure. No row moves citesum's precision lead over lead by more than 1.2 points on either
set; the one that moves it most (one half) lowers it on MMLongBench-Doc, and the two that raise it a little on both
(three quarters, nine tenths) lose FinanceBench a gold page and a figure: none kept. Nor a financial glossary added to the keyword query (a statement's other
names, "capex" as "purchases of property, plant and equipment", COGS, gross margin, PP&E, EPS, net income, revenue
as net sales): .864, .296 / .746 / .095 (.217 / .814) and .907, .394 / .753 / .247 (.308 / .784); the statement names
alone: .847, .284 / .695 / .048 (.207 / .780).

``CrossEncoderReranker`` scores (question, passage) pairs with a sentence-transformers CrossEncoder
loaded from disk only (``local_files_only``; never downloaded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from citesum.tasks.embed import Embedder
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.summarize.evidence import Candidate, Evidence
from citesum.tasks.summarize.retrieve import asks_for_quantity, embed_queries, keyword_query, one_torch_thread
from citesum.tasks.text import evidence_label, sentences, table_rows, words


class Reranker(Protocol):
    name: str  # recorded with a run, e.g. "local" or "cross-encoder:/models/ms-marco"

    def rerank(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Evidence]:
        """At most ``k`` of the candidates, best first, labelled c1..ck."""
        ...


class RerankError(RuntimeError):
    """A reranker returned something that was not among its candidates: a bug, never retried."""


Scored = tuple[Candidate, float, dict[str, float]]  # a chosen candidate, its score, the signals behind it


def label(chosen: Sequence[Scored]) -> list[Evidence]:
    return [Evidence(evidence_label(i), c, score, signals) for i, (c, score, signals) in enumerate(chosen, 1)]


def check_subset(evidence: Sequence[Evidence], candidates: Sequence[Candidate], k: int) -> list[Evidence]:
    """Evidence must be distinct candidates, at most k, labelled c1.. in order; anything else raises."""
    allowed = {c.chunk.chunk_id: c for c in candidates}
    seen: set[str] = set()
    for i, e in enumerate(evidence, 1):
        if allowed.get(e.chunk_id) != e.candidate:
            raise RerankError(f"evidence {e.label} ({e.chunk_id[:12]}) is not one of the candidates")
        if e.chunk_id in seen:
            raise RerankError(f"evidence {e.label} repeats chunk {e.chunk_id[:12]}")
        if e.label != evidence_label(i):
            raise RerankError(f"evidence label {e.label!r} at position {i}; expected {evidence_label(i)!r}")
        seen.add(e.chunk_id)
    if len(evidence) > k:
        raise RerankError(f"{len(evidence)} pieces of evidence; at most {k} were asked for")
    return list(evidence)


# -- the local reranker -------------------------------------------------------------------


def terms(text: str) -> list[str]:
    """Lower-case words with a crude plural strip, so "expenditures" meets "expenditure"."""
    lowered = (w.lower() for w in words(text))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in lowered]


def coverage(query: Sequence[str], idf: dict[str, float], text_terms: set[str]) -> float:
    """Share of the query's IDF mass that the text contains."""
    total = sum(idf[t] for t in query)
    return sum(idf[t] for t in query if t in text_terms) / total if total else 0.0


def local_idf(query: Sequence[str], documents: Sequence[set[str]]) -> dict[str, float]:
    """IDF over the candidate set: a term most candidates share says little about which one answers."""
    n = len(documents)
    return {t: float(np.log(1 + n / (1 + sum(t in d for d in documents)))) for t in query}


def minmax(values: np.ndarray) -> np.ndarray:
    span = float(values.max() - values.min()) if len(values) else 0.0
    return (values - values.min()) / span if span > 1e-9 else np.zeros_like(values)


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def chunk_sentences(text: str, limit: int) -> list[str]:
    """The chunk's sentences, clauses and table lines, longest first when there are more than ``limit``."""
    parts = [p for p in sentences(text, clauses=True, lines=True) if len(p) > 20]
    return sorted(parts, key=len, reverse=True)[:limit] if len(parts) > limit else parts


@dataclass(frozen=True)
class LocalWeights:
    """How much each min-max normalised signal counts, and how selection treats redundancy.

    Chosen on FinanceBench (the dev set) by a grid over {0, 0.25, 0.5, 1} per signal, keeping the
    round values inside the region that also held on MMLongBench; the table weight later on both sets
    (see the module docstring).
    """

    fusion: float = 1.0  # the retrieval rank, as 1 / sqrt(rank): the strongest single signal measured
    lexical: float = 0.5  # share of the question's keywords (IDF over the candidates) in the text
    heading: float = 0.5  # the same in the heading path ("... > Consolidated Balance Sheets")
    table: float = 0.375  # asked for a quantity, the chunk holds table rows (0/1); chosen on both dev sets
    dense: float = 0.0  # cosine of question and chunk: already inside the fusion; added nothing measured
    sentence: float = 0.0  # cosine of question and best sentence: cost latency, lost on FinanceBench; off
    mmr_lambda: float = 0.9  # relevance against redundancy in MMR (1 = no diversity)
    duplicate_jaccard: float = 0.8  # word-set overlap at which a candidate repeats one already chosen
    sentence_pool: int = 8  # with the sentence signal on: only this many best candidates are split and embedded
    sentences_per_chunk: int = 8


class LocalReranker:
    """Relevance from local signals, near-duplicates dropped, diversity by MMR."""

    name = "local"

    def __init__(self, embedder: Embedder, weights: LocalWeights | None = None):
        self.embedder = embedder
        self.weights = weights or LocalWeights()
        self._sentence_vectors = lru_cache(maxsize=4096)(self._embed_sentences)

    def rerank(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Evidence]:
        return check_subset(label(self.choose(question, candidates, k)), candidates, k)

    def choose(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Scored]:
        """The chosen candidates, best first, with their relevance and the signals it came from. Pages are chosen
        among the candidates proper; then a page mate may take its page's place (``with_mates``)."""
        pages = [c for c in candidates if not c.page_mate]
        if not pages or k <= 0:
            return []
        signals = self.signals(question, pages)
        relevance = self.relevance(signals)
        chosen = [
            (pages[i], float(relevance[i]), {n: float(v[i]) for n, v in signals.items()})
            for i in self.select(pages, relevance, k)
        ]
        return self.with_mates(question, chosen, [c for c in candidates if c.page_mate])

    def with_mates(self, question: str, chosen: list[Scored], mates: Sequence[Candidate]) -> list[Scored]:
        """Each chosen candidate, or the mate of its page that scores higher, the chosen pages' chunks scored
        together (the mates' retrieval ranks are those of the fused lists). The page keeps its place and its score:
        only which of its chunks is quoted changes, and ``mate_gain`` records by how much the mate won."""
        pages = {_page(c) for c, _, _ in chosen}
        pool = [c for c, _, _ in chosen] + [m for m in mates if _page(m) in pages]
        if len(pool) == len(chosen):
            return chosen
        relevance = self.relevance(self.signals(question, pool))
        taken: set[int] = set()
        result: list[Scored] = []
        for i, (candidate, score, signals) in enumerate(chosen):
            rivals = [j for j in range(len(chosen), len(pool)) if _page(pool[j]) == _page(candidate) and j not in taken]
            best = max(rivals, key=lambda j: relevance[j], default=None)
            if best is None or relevance[best] <= relevance[i]:
                result.append((candidate, score, signals))
                continue
            taken.add(best)
            result.append((pool[best], score, {**signals, "mate_gain": float(relevance[best] - relevance[i])}))
        return result

    # -- signals ---------------------------------------------------------------------------

    def signals(self, question: str, candidates: Sequence[Candidate]) -> dict[str, np.ndarray]:
        qv = embed_queries(self.embedder, [question])[0]  # retrieval embedded it already: no model call
        query = list(dict.fromkeys(terms(keyword_query(question))))
        texts = [set(terms(c.chunk.text)) for c in candidates]
        idf = local_idf(query, texts)
        found = {
            "fusion": np.array([1 / np.sqrt(c.rank) for c in candidates]),
            "lexical": np.array([coverage(query, idf, t) for t in texts]),
            "heading": np.array([coverage(query, idf, set(terms(c.chunk.heading))) for c in candidates]),
            "dense": np.array([float(c.vector @ qv) if c.vector is not None else 0.0 for c in candidates]),
        }
        if asks_for_quantity(question):  # its answer is a figure, and statements and tables hold most figures
            found["table"] = np.array([float(bool(table_rows(c.chunk.text))) for c in candidates])
        if self.weights.sentence > 0:  # the only signal that needs the model per candidate
            found["sentence"] = self.best_sentence(qv, candidates, self.relevance(found))
        return found

    def best_sentence(self, qv: np.ndarray, candidates: Sequence[Candidate], prior: np.ndarray) -> np.ndarray:
        """Best sentence cosine for the ``sentence_pool`` candidates ranked first so far; 0 for the rest."""
        best = np.zeros(len(candidates))
        for i in np.argsort(-prior, kind="stable")[: self.weights.sentence_pool]:
            vectors = self._sentence_vectors(candidates[i].chunk.text)
            if len(vectors):
                best[i] = float((vectors @ qv).max())
        return best

    def _embed_sentences(self, text: str) -> np.ndarray:
        with one_torch_thread():  # a handful of short texts: see one_torch_thread
            return self.embedder.embed(chunk_sentences(text, self.weights.sentences_per_chunk))

    def relevance(self, signals: dict[str, np.ndarray]) -> np.ndarray:
        """Weighted mean of the min-max normalised signals, in [0, 1]."""
        weights = {name: getattr(self.weights, name) for name in signals}
        total = sum(weights.values())
        combined = sum(weights[name] * minmax(values) for name, values in signals.items())
        return combined / total if total else np.zeros(len(next(iter(signals.values()))))

    # -- selection -----------------------------------------------------------------------

    def select(self, candidates: Sequence[Candidate], relevance: np.ndarray, k: int) -> list[int]:
        """MMR over the candidates that are not near-duplicates of a better one."""
        keep = self.distinct(candidates, relevance)
        vectors = np.stack([c.vector for c in candidates]) if all(c.vector is not None for c in candidates) else None
        chosen: list[int] = []
        while keep and len(chosen) < k:
            best = max(keep, key=lambda i: self._mmr(i, chosen, relevance, vectors))
            chosen.append(best)
            keep.remove(best)
        return chosen

    def _mmr(self, i: int, chosen: list[int], relevance: np.ndarray, vectors: np.ndarray | None) -> float:
        lam = self.weights.mmr_lambda
        if not chosen or vectors is None:
            return float(relevance[i])
        redundancy = float((vectors[chosen] @ vectors[i]).max())
        return lam * float(relevance[i]) - (1 - lam) * redundancy

    def distinct(self, candidates: Sequence[Candidate], relevance: np.ndarray) -> list[int]:
        """Candidates in relevance order, without those whose words nearly repeat a better one's."""
        kept: list[int] = []
        words: list[set[str]] = []
        for i in np.argsort(-relevance, kind="stable"):
            own = set(terms(candidates[i].chunk.text))
            if all(jaccard(own, other) < self.weights.duplicate_jaccard for other in words):
                kept.append(int(i))
                words.append(own)
        return kept


def _page(candidate: Candidate) -> tuple[str, int]:
    return candidate.chunk.document_id, candidate.chunk.page_start


# -- a cross-encoder from disk ---------------------------------------------------------------


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder scores (question, passage) pairs; loaded from disk only."""

    def __init__(self, name_or_path: str, *, batch_size: int = 16):
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{name_or_path}"
        self.batch_size = batch_size
        try:
            self._model = CrossEncoder(name_or_path, device="cpu", local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"cross-encoder {name_or_path!r} could not be loaded from disk ({exc}); give a local model folder "
                "or a model already in the Hugging Face cache, or use the 'local' reranker"
            ) from exc

    def rerank(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Evidence]:
        candidates = [c for c in candidates if not c.page_mate]  # it scores every passage: one a page is enough
        if not candidates or k <= 0:
            return []
        pairs = [(question, c.chunk.embedding_text) for c in candidates]
        scores = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k]
        rows = [(candidates[i], float(scores[i]), {"cross_encoder": float(scores[i])}) for i in order]
        return check_subset(label(rows), candidates, k)


def load_reranker(name: str, embedder: Embedder) -> Reranker:
    """``"local"`` is the model-free default; anything else names a CrossEncoder on disk."""
    if name == "local":
        return LocalReranker(embedder)
    return CrossEncoderReranker(name)
