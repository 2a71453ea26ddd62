"""Topics from headings (document title skipped, consecutive sections grouped) or from clusters."""

from __future__ import annotations

import numpy as np

from citesum.tasks.summarize.topics import (
    MAX_TOPICS,
    SHORT_TOPIC_WORDS,
    characteristic_terms,
    section_rows,
    topics_from_clusters,
    topics_from_headings,
)

SECTIONS = [f"{n} Section {n}" for n in range(1, 14)]


def rows(headings: list[str], document_id: str = "agreement.pdf") -> list[dict]:
    return [
        {"chunk_id": f"k{i}", "document_id": document_id, "heading": h, "ordinal": i, "text": f"the text of part {i}"}
        for i, h in enumerate(headings)
    ]


def test_document_title_is_skipped_and_every_section_lands_in_one_topic():
    headings = ["MASTER AGREEMENT"] + [f"MASTER AGREEMENT > {s} > {s}.1 Detail" for s in SECTIONS]
    topics = topics_from_headings(rows(headings))

    assert 5 <= len(topics) <= MAX_TOPICS
    grouped = [title for t in topics for title in t.title.split("; ")]
    assert grouped == SECTIONS  # all 13, in order, each once
    assert all(t.origin == "headings" and t.document_ids == ("agreement.pdf",) for t in topics)
    assert topics[0].query.startswith("Section 1")  # numbering is not searched for


def test_few_sections_give_no_heading_topics():
    assert topics_from_headings(rows(["1 Intro", "2 Body", "2 Body", "3 End"])) == []
    assert [k.title for k in section_rows(rows(["", "1 Intro"]))] == ["(front matter)", "1 Intro"]


def test_clusters_are_named_by_their_characteristic_terms():
    texts = ["invoice payment fee invoice"] * 6 + ["termination notice breach notice"] * 6
    data = [
        {"chunk_id": f"k{i}", "document_id": "d.pdf", "heading": "", "ordinal": i, "text": t}
        for i, t in enumerate(texts)
    ]
    vectors = (
        np.array([[1.0, 0.0] if "invoice" in t else [0.0, 1.0] for t in texts]) + np.linspace(0, 0.01, 12)[:, None]
    )
    topics = topics_from_clusters(data, vectors)
    names = {t.title for t in topics}
    assert any(name.startswith("invoice") for name in names)
    assert any(name.startswith("notice") for name in names)
    assert characteristic_terms(["alpha alpha beta", "beta gamma gamma"], n=1) == [["alpha"], ["gamma"]]


def test_heading_topics_keep_their_own_chunks_and_title_only_parts_are_no_sections():
    headings = ["REVIEW"] + [f"REVIEW > {s}" for s in SECTIONS[:6]]
    data = rows(headings)
    data[0]["text"] = "REVIEW Prepared for the Board"  # the title and four words: no section
    data[3]["text"] = " ".join(["word"] * SHORT_TOPIC_WORDS)
    assert [k.title for k in section_rows(data)] == SECTIONS[:6]
    topics = topics_from_headings(data)
    assert [t.chunk_ids for t in topics] == [(f"k{i}",) for i in range(1, 7)]
    assert [t.short for t in topics] == [i != 3 for i in range(1, 7)]  # only k3 holds enough text
