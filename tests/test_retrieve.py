"""Hybrid retrieval on a LanceDB store on disk, with the real embedding model."""

from __future__ import annotations

import pytest

from tasks.records import Chunk, DocumentRecord
from tasks.retrieve import dense_candidates, document_filter, keyword_query, retrieve
from tasks.store import LanceStore

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
    s = LanceStore(str(tmp_path / "db"))
    s.check_model(embedder.name, embedder.dimension)
    put(s, embedder, "a.pdf", FILLER)
    put(s, embedder, "b.pdf", [t.replace("The company", "The other company") for t in FILLER])
    return s


def test_retrieval_restricted_to_a_document_returns_only_its_chunks(store, embedder):
    for query in ["capital expenditure on plants", "dividend", "other company currency risk"]:
        found = retrieve(store, embedder, query, k=50, document_ids=["b.pdf"])
        assert found, query
        assert {c.document_id for c in found} == {"b.pdf"}
        assert len(found) == len(FILLER)  # all of b, and nothing of a, even with k past b's size


def test_retrieval_across_documents_when_none_is_chosen(store, embedder):
    found = retrieve(store, embedder, "dividend share repurchase", k=50)
    assert {c.document_id for c in found} == {"a.pdf", "b.pdf"}


def test_candidates_carry_ranks_scores_and_vectors(store, embedder):
    found = retrieve(store, embedder, "goodwill impairment test", k=5, document_ids=["a.pdf"])
    assert [c.rank for c in found] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in zip(found, found[1:], strict=False))
    assert found[0].text == FILLER[7] and found[0].dense_rank == 1 and found[0].lexical_rank == 1
    assert all(c.vector is not None and c.vector.shape == (embedder.dimension,) for c in found)


def test_a_rare_token_is_found_by_its_lexical_match(store, embedder):
    rare = "Schedule QX7-ZR lists the covenant waivers granted by the lenders."
    put(store, embedder, "c.pdf", [*FILLER, rare])
    found = retrieve(store, embedder, "Where is QX7-ZR?", k=3, document_ids=["c.pdf"])
    hit = next(c for c in found if c.text == rare)
    assert hit.lexical_rank == 1


@pytest.mark.parametrize(
    "query",
    [
        'What is "net PP&E"? (FY2018): see [note 7] -- AND OR NOT * ~ ^ \\ {a} /b/',
        '"unterminated',
        "field:value +must -not title:(a b)",
        "???",
        "",
        "the of and",
    ],
)
def test_awkward_punctuation_does_not_break_full_text_search(store, embedder, query):
    found = retrieve(store, embedder, query, k=4, document_ids=["a.pdf"])
    assert len(found) == 4 and {c.document_id for c in found} == {"a.pdf"}


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
    assert found[0].text == FILLER[6]
