"""Sections a reader can trust: long sentences quoted by clauses, title-only front matter not a section.

The review PDF is made here: a title and a four-word line above the first heading, an overview that is one
sentence of about a hundred words in ';' clauses, and five short risk sections.
"""

from __future__ import annotations

import pymupdf
import pytest

from citesum.flows.ingest import run_ingest
from citesum.flows.summarize import run_summarize
from citesum.tasks.settings import Settings
from citesum.tasks.text import normalize_space, words
from tests.flows.test_summarize_flow import closed_port_url

REVIEW = "risk_review.pdf"
OVERVIEW = (
    "This review covers the six principal risks that the board identified for the 2024 financial year; "
    "it sets out for each risk the exposure measured at the year end, the controls that were in place "
    "and the changes that management proposes for the coming year; it draws on the internal audit "
    "reports, the treasury records and interviews with the heads of the business units; it does not "
    "cover the pension scheme, whose risks are reported separately to the trustees; and it concludes "
    "that liquidity risk and legal risk need closer monitoring by the audit committee in 2025."
)
RISKS = {
    "2 Market Risk": "Market risk arises from changes in interest rates and exchange rates. The group hedges "
    "eighty percent of its euro revenue for twelve months ahead. A rise of one point in rates would "
    "reduce profit by 2.1 million.",
    "3 Credit Risk": "Credit risk is concentrated in the ten largest customers, who owe half of all trade "
    "receivables. Each of them is reviewed by the credit committee every quarter. No large customer "
    "defaulted during the year.",
    "4 Liquidity Risk": "The group holds cash and committed facilities of 140 million against debts of 95 "
    "million falling due within two years. The revolving facility must be renewed before June 2025. "
    "Treasury forecasts cash weekly for thirteen weeks.",
    "5 Operational Risk": "The main operational risk is an outage of the order system at the Leeds data "
    "centre. A second site can take over the orders within four hours. The recovery plan was tested "
    "twice this year without loss of data.",
    "6 Legal Risk": "Two claims by former distributors are pending in the commercial court. The group "
    "disputes both claims and has set aside 3.5 million for legal costs. A ruling is expected in the "
    "second half of 2025.",
}


def write_review(path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    # Front matter of a title and a line of four words: nothing to cover.
    page.insert_text((72, 80), "RISK REVIEW 2024", fontname="hebo", fontsize=18)
    page.insert_text((72, 100), "Prepared for the Board", fontname="helv", fontsize=10)
    y = 130.0
    for heading, text in [("1 Overview", OVERVIEW), *RISKS.items()]:
        page.insert_text((72, y), heading, fontname="hebo", fontsize=13)
        box = pymupdf.Rect(72, y + 8, 523, y + 160)
        assert page.insert_textbox(box, text, fontname="helv", fontsize=10) >= 0
        y += 120
        if y > 700:
            page, y = doc.new_page(), 80.0
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    write_review(root / "corpus" / REVIEW)
    settings = Settings(
        corpus=root / "corpus", db=str(root / "db"), runs_dir=root / "runs", ollama_host=closed_port_url()
    )
    assert run_ingest(None, settings).is_completed()
    return settings


def summarize(settings: Settings, question: str, mode: str):
    state = run_summarize(question, [REVIEW], mode, "extractive", settings)
    assert state.is_completed(), state
    return state.result()


def overview_clauses(summary):
    """Sentences of the summary that are parts of the overview sentence, with their citations."""
    whole = normalize_space(OVERVIEW)
    return [
        (s, part)
        for part in summary.parts
        for s in part.section.sentences
        if normalize_space(s.text) in whole and s.citations
    ]


def test_a_sentence_over_the_word_cap_is_quoted_by_its_clauses_verbatim_and_cited(review):
    assert len(words(OVERVIEW)) > 90 and OVERVIEW.count(";") == 4
    summary = summarize(review, "What does the review conclude about liquidity and legal risk?", "query")

    quoted = overview_clauses(summary)
    assert quoted, summary.markdown()
    _, table = summary.citations()
    local, _ = summary.citations()
    for sentence, part in quoted:
        assert len(words(sentence.text)) < len(words(OVERVIEW))  # a clause, not the whole sentence
        index = summary.parts.index(part)
        assert all(table[local[(index, label)]].page_start == 1 for label in sentence.citations)
    assert summary.metrics["citation_rate"] == 1.0


def test_exhaustive_summary_covers_every_real_section_and_not_the_title(review):
    summary = summarize(review, "Summarize every risk", "exhaustive")

    titles = [part.section.title for part in summary.parts]
    assert "(front matter)" not in titles, titles  # the title alone is no section to cover
    assert {"1 Overview", *RISKS} <= set(titles), titles
    (overview,) = [p for p in summary.parts if p.section.title == "1 Overview"]
    assert overview.section.sentences and all(s.citations for s in overview.section.sentences)
    assert all(normalize_space(s.text) in normalize_space(OVERVIEW) for s in overview.section.sentences)
    assert summary.metrics["coverage"] == 1.0
    assert summary.metrics["not_bearing"] == 0
    assert not any(w.startswith("Coverage collapse") for w in summary.warnings)
