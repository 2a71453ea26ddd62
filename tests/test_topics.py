"""Topics from headings (document title skipped, consecutive sections grouped) or from clusters."""

from __future__ import annotations

import numpy as np

from citesum.tasks.summarize.topics import (
    MAX_TOPICS,
    SHORT_TOPIC_WORDS,
    TITLE_CHARS,
    Appended,
    appended_from,
    characteristic_terms,
    document_titles,
    is_reference_list,
    section_rows,
    section_titles,
    topic_title,
    topics_from_clusters,
    topics_from_headings,
    weak_title,
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


def test_a_running_title_under_a_cover_page_is_skipped_and_the_cover_is_front_matter():
    """A filing: its cover page has headings of its own, then every chunk runs under "3M COMPANY"."""
    cover = ["UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "FORM 10-K"]
    body = [f"3M COMPANY > {s}" for s in SECTIONS for _ in range(2)]
    data = rows(cover + body)

    assert document_titles(data)["agreement.pdf"].headings == ("3M COMPANY",)
    assert [k.title for k in section_rows(data)] == ["(front matter)", *SECTIONS]
    topics = topics_from_headings(data)
    assert [title for t in topics for title in t.title.split("; ")] == SECTIONS


def test_title_levels_are_skipped_one_below_the_other_and_a_long_last_section_is_no_title():
    inner = "FORM 10-K > BEST BUY FISCAL 2019 FORM 10-K"
    data = rows(["FORM 10-K", "FORM 10-K > CAUTIONARY STATEMENT"] + [f"{inner} > {s}" for s in SECTIONS] * 2)
    assert document_titles(data)["agreement.pdf"].headings == ("FORM 10-K", "BEST BUY FISCAL 2019 FORM 10-K")
    assert [k.title for k in section_rows(data)][0] == "(front matter)"

    # A heading with nothing under it is the section, however many chunks share it.
    assert [k.title for k in section_rows(rows(["REPORT > Findings"] * 6))] == ["Findings"]
    assert [k.title for k in section_rows(rows(["Findings"] * 6))] == ["Findings"]

    # The last section holds most chunks (a paper's references), but not nine in ten: a section, not a title.
    data = rows([*SECTIONS[:5], *["6 References"] * 40])
    assert document_titles(data) == {}
    assert [k.title for k in section_rows(data)] == [*SECTIONS[:5], "6 References"]


def test_a_topic_of_many_sections_is_titled_by_its_first_and_last():
    assert topic_title(["1 Scope", "2 Fees"]) == "1 Scope; 2 Fees"
    names = [f"NOTE {n}. A note on the accounts of the year" for n in range(1, 8)]
    assert topic_title(names) == f"{names[0]} … {names[-1]} (7 sections)"
    assert topic_title(names, 9) == f"{names[0]} … {names[-1]} (9 sections)"  # two more that name nothing
    many = [f"NOTE {n}. Accounting policy number {n}" for n in range(1, 61)]
    topics = topics_from_headings(rows([f"ANNUAL REPORT > {s}" for s in many]))
    assert len(topics) == MAX_TOPICS and all(len(t.title) <= 2 * TITLE_CHARS for t in topics)
    assert topics[0].title.startswith("NOTE 1. ") and "sections)" in topics[0].title
    assert "NOTE 1. Accounting policy number 1; NOTE 2." in topics[0].query  # retrieval still searches every name


def test_weak_headings_name_no_topic():
    for weak in (
        "but a Good Reranker for Hard Samples!",
        "1",
        "iii",
        "Yes",
        "☒Annual report pursuant to section 13",
        "For the transition period from ________ to",
        "term value for all of our stakeholders.”",
        "AND CONDITIONS",  # the second line of "TERMS / AND CONDITIONS"
        "702 S.W. 8th Street",  # a filing's cover page: its address, telephone, period
        "Registrant’s telephone number, including area code (703)-414-6338",
        "For the quarterly period ended July 2, 2023",
        "Date of Report (Date of earliest event reported): May 26, 2023",
        "Title of each class Trading Symbol(s) Name of each exchange on which registered",
    ):
        assert weak_title(weak), weak
    for strong in (
        "Andean Operations",
        "Order Backlog",
        "Street Lighting Contracts",
        "PART II",
        "3 LOGIC-LM",
        "Is the service safe?",
        "b. Overview",
        "iPhone sales",
        "Item 6. [Reserved]",
    ):
        assert not weak_title(strong), strong

    opening = ["but a Good Reranker for Hard Samples!"] * 3  # the title's second line, set as a heading
    body = [s for s in SECTIONS for _ in range(2)]
    data = rows([*opening, *body[:6], "Yes", *body[6:]])  # a form's answer between sections 3 and 4
    titles = [t.title for t in topics_from_headings(data)]
    assert titles[0] == "(front matter)"
    assert not any("Yes" in t.split("; ") for t in titles)  # grouped with named sections, it does not name them
    assert [n for t in titles[1:] for n in t.split("; ")] == SECTIONS

    short = rows([*opening, *body[:6]])  # two documents of four sections: each section a topic of its own
    two = topics_from_headings(short + [{**r, "document_id": "b.pdf", "chunk_id": "b" + r["chunk_id"]} for r in short])
    assert [t.title for t in two if "front matter" in t.title] == [
        "agreement.pdf: (front matter)",
        "b.pdf: (front matter)",
    ]


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


def test_a_section_over_most_of_the_document_gives_way_to_its_subsections():
    """A paper whose figure label "Filter" is set larger than its section headings: the label heads the last three
    quarters of its chunks, so they are no section among others; its subsections are."""
    subsections = ["5 Experiments", "6 Conclusion", "References", "A Datasets", "B Details"]
    data = rows(["Title line", "Title line > 1 Introduction", "Filter"] + [f"Filter > {s}" for s in subsections] * 2)

    assert [k.title for k in section_rows(data)] == ["Title line", "Filter", *subsections]
    assert [k.path for k in section_rows(data)][2] == ("Filter", "5 Experiments")
    topics = topics_from_headings(data)
    assert [t.title for t in topics] == ["Title line", "Filter", *(s for s in subsections if s != "References")]
    assert topics[2].chunk_ids == ("k3", "k8")  # a subsection's own chunks, in document order

    # Again one level down while one dominates; a section over most chunks with nothing below it stays whole.
    deep = rows(["Cover", "FORM 10-K", *[f"FORM 10-K > ACME > {s}" for s in subsections] * 2, "Exhibit"])
    assert [k.title for k in section_rows(deep)] == ["Cover", "FORM 10-K", *subsections, "Exhibit"]


def test_sections_of_one_name_under_different_headings_keep_titles_of_their_own():
    """A credit agreement repeated in an exhibit (PepsiCo's 8-K): once its dominant sections give way, two sections
    are named "MISCELLANEOUS". An exhaustive summary's parts are keyed by title, so one had replaced the other."""
    data = rows(
        ["X > PRELIMINARY", "X > MISCELLANEOUS", *["X > Exhibit > PRELIMINARY", "X > Exhibit > MISCELLANEOUS"] * 3]
    )
    grouped = section_rows(data)
    titles = section_titles(list(grouped))
    assert list(titles.values()) == [
        "PRELIMINARY",
        "MISCELLANEOUS",
        "Exhibit > PRELIMINARY",
        "Exhibit > MISCELLANEOUS",
    ]
    assert sum(len(group) for group in grouped.values()) == len(data)  # every chunk in some section

    # A brief of such sections titles its topics the same way.
    guarantee = rows([*(r["heading"] for r in data), *["X > Exhibit > GUARANTEE"] * 3])
    topics = topics_from_headings(guarantee)
    assert [t.title for t in topics] == [*titles.values(), "GUARANTEE"]
    assert topics[2].query == "PRELIMINARY"  # retrieval searches the section's own name


def test_a_reference_list_is_no_topic():
    # A paper's "References" had a topic of its own, quoting "Zhuosheng Zhang, Aston Zhang, Mu Li, and Alex Smola."
    papers = ["1 Introduction", "2 Method", "3 Results", "4 Discussion", "5 Conclusion", "References", "A Datasets"]
    topics = topics_from_headings(rows([f"{s} > {s}" for s in papers]))
    titles = [title for t in topics for title in t.title.split("; ")]
    assert titles == [s for s in papers if s != "References"]
    assert [is_reference_list(t) for t in ("References", "7 Bibliography", "REFERENCES:", "Referenced works")] == [
        True,
        True,
        True,
        False,
    ]


def test_no_heading_topic_joins_two_documents_sections():
    memo = rows(["MEMORANDUM", "MEMORANDUM > Parking", "MEMORANDUM > Security"], "memo.pdf")
    agreement = rows(["MASTER AGREEMENT"] + [f"MASTER AGREEMENT > {s}" for s in SECTIONS], "agreement.pdf")
    topics = topics_from_headings(memo + agreement)

    assert len(topics) == MAX_TOPICS
    assert [t.title for t in topics if t.document_ids == ("memo.pdf",)] == ["Parking; Security"]
    of_agreement = [t for t in topics if t.document_ids == ("agreement.pdf",)]
    assert [title for t in of_agreement for title in t.title.split("; ")] == SECTIONS  # every section, in order


def filing_with_exhibit(label_at: int | None = None) -> list[dict]:
    """A 10-K's thirteen sections, two chunks each, then a long plan appended under "Exhibit 10.13" (Boeing's 10-K:
    its deferred compensation plan is 29% of its chunks) and two short certifications."""
    body = [f"10-K > {s}" for s in SECTIONS for _ in range(2)]
    plan = [f"10-K > ARTICLE {n} Plan terms {n}" for n in range(1, 6) for _ in range(6)]
    data = rows([*body, "10-K", *plan, "10-K", "10-K > Certification"])
    labels = {len(body): "Exhibit 10.13", len(body) + 1 + len(plan): "EXHIBIT 31.1"}
    if label_at is not None:  # the label set elsewhere instead
        labels = {label_at: "Exhibit 99.1"}
    for ordinal, label in labels.items():
        data[ordinal]["text"] = f"{label}\nTHE COMPANY'S PLAN OR CERTIFICATE"
    return data


def test_appended_exhibits_are_one_topic_of_their_own():
    data = filing_with_exhibit()
    assert appended_from(data) == {"agreement.pdf": Appended(26, ("Exhibit 10.13", "EXHIBIT 31.1"))}

    topics = topics_from_headings(data)
    assert len(topics) == MAX_TOPICS
    *body, appended = topics
    assert [title for t in body for title in t.title.split("; ")] == SECTIONS  # the filing keeps seven topics
    assert appended.title == "Appended: Exhibit 10.13; EXHIBIT 31.1"
    assert len(appended.chunk_ids) == 30 + 1  # every article of the plan and the certification, in one topic
    assert appended.query.startswith("Plan terms 1; Plan terms 2")


def test_an_exhibit_label_that_opens_the_document_or_names_a_column_appends_nothing():
    # An 8-K's press release is its Exhibit 99.1, from the first page: the document itself.
    assert appended_from(filing_with_exhibit(label_at=1)) == {}
    table = filing_with_exhibit(label_at=1)
    table[20]["text"] = "Exhibit Number\nDescription"  # an exhibit index's column, no label
    assert appended_from(table) == {}
    assert appended_from(filing_with_exhibit(label_at=20)) == {"agreement.pdf": Appended(20, ("Exhibit 99.1",))}
