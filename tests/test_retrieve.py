"""Hybrid retrieval on a LanceDB store on disk, with the real embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from citesum.tasks.records import Chunk, DocumentRecord
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.retrieve import (
    RRF_CONSTANT,
    candidate_of,
    dense_candidates,
    document_filter,
    embed_queries,
    fuse,
    keyword_query,
    query_views,
    question_parts,
    retrieve,
)

FILLER = [
    "Revenue grew in every segment as demand for industrial adhesives recovered.",
    "The board approved a quarterly dividend and a new share repurchase programme.",
    "Operating expenses rose because of higher freight and wage costs.",
    "Cash from operations funded capital expenditure on two new plants.",
    "The company is exposed to currency risk from its European sales.",
    "Litigation about product liability is described in the notes.",
    "Inventories are valued at the lower of cost and net realisable value.",
    "Goodwill is tested for impairment every year in the fourth quarter.",
]


def put(store: LanceStore, embedder, doc_id: str, texts: list[str], heading: str = "Notes") -> list[Chunk]:
    chunks = [Chunk(doc_id, "v1", f"/corpus/{doc_id}", i + 1, i + 1, heading, t, i) for i, t in enumerate(texts)]
    record = DocumentRecord(doc_id, "v1", f"/corpus/{doc_id}", len(chunks), len(chunks), "ok", embed_model="m")
    store.supersede(record, chunks, embedder.embed([c.embedding_text for c in chunks]))
    return chunks


@pytest.fixture
def store(tmp_path, embedder):
    s = LanceStore.open_or_create(str(tmp_path / "db"), embedder.name, embedder.dimension)
    put(s, embedder, "a.pdf", FILLER)
    put(s, embedder, "b.pdf", [t.replace("The company", "The other company") for t in FILLER])
    return s


def test_retrieval_restricted_to_a_document_returns_only_its_chunks(store, embedder):
    for query in ["capital expenditure on plants", "dividend", "other company currency risk"]:
        found = retrieve(store, embedder, query, k=50, document_ids=["b.pdf"])
        assert found, query
        assert {c.chunk.document_id for c in found} == {"b.pdf"}
        assert len(found) == len(FILLER)  # all of b, and nothing of a, even with k past b's size


def test_retrieval_across_documents_when_none_is_chosen(store, embedder):
    found = retrieve(store, embedder, "dividend share repurchase", k=50)
    assert {c.chunk.document_id for c in found} == {"a.pdf", "b.pdf"}


def test_candidates_carry_ranks_scores_and_vectors(store, embedder):
    found = retrieve(store, embedder, "goodwill impairment test", k=5, document_ids=["a.pdf"])
    assert [c.rank for c in found] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in zip(found, found[1:], strict=False))  # one chunk per page here
    assert found[0].chunk.text == FILLER[7] and found[0].dense_rank == 1 and found[0].lexical_rank == 1
    assert all(c.vector is not None and c.vector.shape == (embedder.dimension,) for c in found)


def test_a_rare_token_is_found_by_its_lexical_match(store, embedder):
    rare = "Schedule QX7-ZR lists the covenant waivers granted by the lenders."
    put(store, embedder, "c.pdf", [*FILLER, rare])
    found = retrieve(store, embedder, "Where is QX7-ZR?", k=3, document_ids=["c.pdf"])
    hit = next(c for c in found if c.chunk.text == rare)
    assert hit.lexical_rank == 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('What is "goodwill"? (FY2018): see [page 7] -- AND OR NOT * ~ ^ \\ {a} /b/', FILLER[7]),
        ('"unterminated dividend', FILLER[1]),
        ("field:freight +must -not title:(wage costs)", FILLER[2]),
        ("inventories??? ~valued^2", FILLER[6]),
        ("currency* AND 'European' OR", FILLER[4]),
        ('litigation:"product liability', FILLER[5]),
    ],
)
def test_awkward_punctuation_does_not_break_full_text_search(store, embedder, query, expected):
    keywords = keyword_query(query)
    assert keywords  # the full-text search runs: nothing of the query's syntax reaches its parser
    (best,) = store.search_text(keywords, k=1, where=document_filter(["a.pdf"]))
    assert best["text"] == expected  # BM25 alone finds the chunk with the query's words
    found = retrieve(store, embedder, query, k=4, document_ids=["a.pdf"])
    assert len(found) == 4 and {c.chunk.document_id for c in found} == {"a.pdf"}
    assert next(c for c in found if c.lexical_rank == 1).chunk.text == expected


@pytest.mark.parametrize("query", ["???", "", "the of and"])
def test_a_query_without_keywords_is_searched_by_vector_alone(store, embedder, query):
    assert keyword_query(query) == ""
    found = retrieve(store, embedder, query, k=4, document_ids=["a.pdf"])
    assert len(found) == 4 and {c.chunk.document_id for c in found} == {"a.pdf"}
    assert all(c.lexical_rank is None and c.dense_rank is not None for c in found)


def test_keyword_query_keeps_topic_words_only():
    question = (
        "Assume that you are a public equities analyst. Answer the following question by primarily using "
        'information shown in the balance sheet: what is the FY2018 net "PP&E" for 3M?'
    )
    assert keyword_query(question) == "public equities balance sheet FY2018 FY 2018 net PP 3M"
    assert keyword_query("what is the answer?") == ""


def test_document_filter_quotes_ids():
    assert document_filter(None) is None
    assert document_filter(["it's.pdf", "b.pdf"]) == "document_id IN ('it''s.pdf', 'b.pdf')"
    with pytest.raises(ValueError):
        document_filter([])


def test_dense_candidates_are_plain_vector_search(store, embedder):
    vector = embedder.embed(["inventory valuation"])[0]
    found = dense_candidates(store, vector, k=3, document_ids=["a.pdf"])
    assert [c.dense_rank for c in found] == [1, 2, 3] and all(c.lexical_rank is None for c in found)
    assert found[0].chunk.text == FILLER[6]


def row(chunk: str, page: int, doc: str = "a.pdf") -> dict:
    return {
        "chunk_id": chunk,
        "document_id": doc,
        "version": "v1",
        "source": doc,
        "page_start": page,
        "page_end": page,
        "heading": "",
        "text": chunk,
        "ordinal": 0,
        "vector": np.zeros(3, np.float32),
    }


def test_fusion_adds_reciprocal_ranks_over_every_list():
    a, b, c, d = row("a", 1), row("b", 2), row("c", 3), row("d", 4)
    found = fuse([[a, b, c], [b, a]], [c, d], k=10)
    by_id = {x.chunk.text: x for x in found}
    assert by_id["a"].score == pytest.approx(1 / (RRF_CONSTANT + 1) + 1 / (RRF_CONSTANT + 2))
    assert by_id["c"].score == pytest.approx(1 / (RRF_CONSTANT + 3) + 1 / (RRF_CONSTANT + 1))
    assert [x.chunk.text for x in found] == ["a", "b", "c", "d"]  # a and b tie: a was seen first
    assert (by_id["a"].dense_rank, by_id["a"].lexical_rank) == (1, None)  # best rank over dense views
    assert (by_id["b"].dense_rank, by_id["c"].lexical_rank, by_id["d"].dense_rank) == (1, 1, None)
    assert [x.rank for x in found] == [1, 2, 3, 4]
    assert [x.chunk.text for x in fuse([[a, b, c]], [], k=2)] == ["a", "b"]


def test_fusion_spreads_candidates_over_pages_before_repeating_one():
    p1a, p1b, p1c, p2, p3 = row("p1a", 1), row("p1b", 1), row("p1c", 1), row("p2", 2), row("p3", 3)
    found = fuse([[p1a, p1b, p1c, p2, p3]], [], k=5)
    assert [x.chunk.text for x in found] == ["p1a", "p2", "p3", "p1b", "p1c"]  # nothing dropped
    assert [x.page_mate for x in found] == [False] * 5
    same_page_other_doc = row("b1", 1, doc="b.pdf")
    assert [x.chunk.text for x in fuse([[p1a, p1b, same_page_other_doc]], [], k=2) if not x.page_mate] == ["p1a", "b1"]


def test_the_chunks_a_round_robin_leaves_out_follow_as_their_pages_mates():
    """A statement set over a page in several chunks: the one holding the row asked for may not be the one the
    searches liked best, and the reranker may quote it in its page's place (issue 11, answer found)."""
    p1a, p1b, p1c, p2, p3 = row("p1a", 1), row("p1b", 1), row("p1c", 1), row("p2", 2), row("p3", 3)
    found = fuse([[p1a, p1b, p1c, p2, p3]], [], k=2)
    assert [(x.chunk.text, x.rank, x.page_mate) for x in found] == [
        ("p1a", 1, False),
        ("p2", 2, False),
        ("p1b", 2, True),  # its rank in the fused lists
        ("p1c", 3, True),
    ]  # p3's page was not kept: no mate of it


def test_query_views_separate_the_topics_of_a_long_question():
    views = query_views("What was FY2019 revenue? Use the income statement and the cash flow statement.")
    assert views.dense == (
        "What was FY2019 revenue? Use the income statement and the cash flow statement.",
        "FY2019 FY 2019 revenue income statement cash flow",
        "FY2019 FY 2019 revenue",
        "income statement cash flow",
    )
    assert views.lexical == "FY2019 FY 2019 revenue income statement cash flow"
    assert query_views("Who audits the accounts?").dense == ("Who audits the accounts?", "audits accounts")


def test_query_vectors_are_embedded_once(embedder):
    calls: list[list[str]] = []

    class Counting:
        name, dimension = embedder.name, embedder.dimension

        def embed(self, texts):
            calls.append(list(texts))
            return embedder.embed(texts)

    counting = Counting()
    first = embed_queries(counting, ["revenue", "dividend", "revenue"])
    again = embed_queries(counting, ["dividend", "goodwill"])
    assert calls == [["revenue", "dividend"], ["goodwill"]]
    assert np.allclose(first[1], again[0]) and np.allclose(first[0], first[2])
    assert np.allclose(first[0], embedder.embed(["revenue"])[0], atol=1e-5)


def test_query_embedding_restores_torch_threads(embedder):
    import torch

    before = torch.get_num_threads()
    seen = []

    class Watching:
        name, dimension = embedder.name, embedder.dimension

        def embed(self, texts):
            seen.append(torch.get_num_threads())
            return embedder.embed(texts)

    embed_queries(Watching(), ["net sales by segment"])
    assert seen == [1] and torch.get_num_threads() == before


def test_query_embedding_from_many_threads(embedder):
    # retrieval tasks are mapped over a thread pool: the cache and the torch setting must hold up
    from concurrent.futures import ThreadPoolExecutor

    import torch

    before = torch.get_num_threads()
    texts = [f"segment revenue note {i % 7}" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(lambda t: embed_queries(embedder, [t, "shared question"]), texts))
    assert all(v.shape == (2, embedder.dimension) for v in vectors)
    assert all(np.allclose(v[1], vectors[0][1]) for v in vectors)
    assert torch.get_num_threads() == before


def test_a_row_read_without_its_vector_is_a_candidate_without_one():
    bare = {name: value for name, value in row("a", 3).items() if name != "vector"}
    made = candidate_of(bare, 1, 0.0, None, None)
    assert made.vector is None and made.chunk.page_start == 3 and made.chunk.text == "a"


def test_a_question_asking_two_things_has_two_parts():
    assert question_parts("How much are the fees and when are invoices due?") == [
        "How much are the fees",
        "when are invoices due?",
    ]
    assert question_parts("What is the notice period; how is notice given?") == [
        "What is the notice period",
        "how is notice given?",
    ]
    # One thing asked: "and" between nouns, a preamble before a comma.
    assert question_parts("What are the rights and obligations on termination?") == [
        "What are the rights and obligations on termination?"
    ]
    assert question_parts("According to the report, what was revenue and how did it grow?") == [
        "According to the report, what was revenue",
        "how did it grow?",
    ]
