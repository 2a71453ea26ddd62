"""The shared text helpers: one sentence splitter, stop-word list, whitespace normaliser,
heading-path format, evidence-label scheme and the word tokenisers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citesum.tasks.text import (
    HEADING_SEPARATOR,
    STOPWORDS,
    content_words,
    evidence_label,
    find_labels,
    is_boilerplate,
    is_chart_text,
    is_contents,
    is_form_field,
    is_fragment,
    is_pointer,
    is_question,
    is_title,
    join_heading,
    normalize_space,
    refers_back,
    run_in_heading,
    sentences,
    split_heading,
    split_sentences,
    tokens,
    words,
)
from tests.summary_fixtures import FILING_CONTENTS

# --- sentences -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Acme Inc. Signed it. Done.", ["Acme Inc. Signed it.", "Done."]),
        ("See No. 5 of the lease. Next.", ["See No. 5 of the lease.", "Next."]),
        ("Fees, e.g. Rent, are due. Next.", ["Fees, e.g. Rent, are due.", "Next."]),
        (
            "Section 12.2 applies. It grew 3.5 percent. Next.",
            ["Section 12.2 applies.", "It grew 3.5 percent.", "Next."],
        ),
        ("Signed by J. R. Smith. Next.", ["Signed by J. R. Smith.", "Next."]),
        ("Sold in the U.S. and Canada. Next.", ["Sold in the U.S. and Canada.", "Next."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Costs rose (see Note 5.) Revenue fell.", ["Costs rose (see Note 5.)", "Revenue fell."]),
        ("Approx. ten units etc. and more. End", ["Approx. ten units etc. and more.", "End"]),
        ("  Line one\nwraps here.\n\nNext one.  ", ["Line one\nwraps here.", "Next one."]),
        ("Rent; fees: due. Next.", ["Rent; fees: due.", "Next."]),  # clauses only when asked
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected
    assert [text[a:b] for a, b in split_sentences(text)] == expected


def test_clauses_split_a_question_as_retrieval_did():
    """What retrieval's own splitter did (cut after . ? ! ; : before a space), on a FinanceBench-style question."""
    question = (
        "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response to the question "
        "by relying on the details shown in the cash flow statement.  Round to two decimals; answer in USD: "
        "use the 10-K."
    )
    assert sentences(question, clauses=True) == [
        "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
        "Give a response to the question by relying on the details shown in the cash flow statement.",
        "Round to two decimals;",
        "answer in USD:",
        "use the 10-K.",
    ]
    # The one splitter's sentence rules hold in clause mode too: "Inc." ends no sentence.
    assert sentences("Did Acme Inc. grow? Use: the 10-K.", clauses=True) == ["Did Acme Inc. grow?", "Use:", "the 10-K."]
    assert sentences("Ratio 1:2; time 10:30", clauses=True) == ["Ratio 1:2;", "time 10:30"]  # no space, no cut
    # Questions are typed in lower case: "?" ends a piece before a lower-case word too.
    assert sentences("what is ROCE in 2023? round to three decimals", clauses=True) == [
        "what is ROCE in 2023?",
        "round to three decimals",
    ]
    assert sentences("what is ROCE in 2023? round to three decimals") == [
        "what is ROCE in 2023? round to three decimals"
    ]


def test_lines_split_a_chunk_into_sentences_and_table_rows_as_the_reranker_did():
    """What the reranker's own splitter did (cut after . ! ? ; before a space, and at every line break)."""
    chunk = "Revenue grew in 2019; costs fell.\nNet sales 2019 1,577 1,402\n\nCost of sales 2019 903 880"
    assert sentences(chunk, clauses=True, lines=True) == [
        "Revenue grew in 2019;",
        "costs fell.",
        "Net sales 2019 1,577 1,402",
        "Cost of sales 2019 903 880",
    ]
    assert sentences(chunk) == [
        "Revenue grew in 2019; costs fell.",
        "Net sales 2019 1,577 1,402\n\nCost of sales 2019 903 880",
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("aB1 .!?;:\n\"')(iv")) | st.characters(), max_size=200),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_sentence_spans_are_ordered_trimmed_and_cover_every_character(
    text: str, clauses: bool, lines: bool, enumerations: bool
) -> None:
    spans = split_sentences(text, clauses=clauses, lines=lines, enumerations=enumerations)
    gaps = zip([0, *(end for _, end in spans)], [*(start for start, _ in spans), len(text)], strict=True)
    assert all(not text[a:b].strip() for a, b in gaps)  # only whitespace falls between sentences
    assert all(a < b and not text[a].isspace() and not text[b - 1].isspace() for a, b in spans)
    if lines:
        assert all("\n" not in text[a:b] for a, b in spans)


# --- stop words, whitespace -------------------------------------------------------------


def test_one_stop_word_list_holds_what_both_old_lists_held():
    retrieval_only = {"against", "am", "me", "myself", "now", "ours", "theirs", "yourselves"}
    validation_only = {"also", "either", "may", "might", "must", "per", "shall", "upon", "within", "without"}
    assert retrieval_only | validation_only <= STOPWORDS
    assert not {"revenue", "notice", "terminate", "lease"} & STOPWORDS


@pytest.mark.parametrize(
    ("text", "expected"),
    [("  a\tb\n\nc  ", "a b c"), ("no\u00a0break\u2003em", "no break em"), ("", ""), (" \n ", ""), ("one", "one")],
)
def test_normalize_space(text: str, expected: str) -> None:
    assert normalize_space(text) == expected


@given(st.text(max_size=80))
def test_normalized_space_has_no_runs_and_keeps_every_other_character(text: str) -> None:
    normal = normalize_space(text)
    assert normal == normal.strip() and "  " not in normal and all(c == " " or not c.isspace() for c in normal)
    assert [c for c in normal if c != " "] == [c for c in text if not c.isspace()]


# --- heading paths -----------------------------------------------------------------------


def test_heading_path_joins_and_splits():
    path = join_heading(["Lease", "12 Termination", "12.2 Notice"])
    assert path == "Lease > 12 Termination > 12.2 Notice"
    assert split_heading(path) == ["Lease", "12 Termination", "12.2 Notice"]
    assert split_heading("") == [] and join_heading([]) == ""
    assert split_heading(" Lease >  > Notice ") == ["Lease", "Notice"]  # empty parts dropped


@given(st.lists(st.text(min_size=1, max_size=12).map(str.strip).filter(lambda t: t and ">" not in t), max_size=5))
def test_heading_path_round_trips(parts: list[str]) -> None:
    assert split_heading(join_heading(parts)) == parts
    assert join_heading(parts).count(HEADING_SEPARATOR) == max(len(parts) - 1, 0)


# --- evidence labels ---------------------------------------------------------------------


def test_evidence_labels_are_made_and_found():
    assert [evidence_label(i) for i in (1, 2, 12)] == ["c1", "c2", "c12"]
    assert find_labels("[C1][c3] (c12), [c2; c5]") == ["c1", "c3", "c12", "c2", "c5"]
    assert find_labels("no labels [1] here") == []
    assert all(find_labels(f"[{evidence_label(i)}]") == [evidence_label(i)] for i in range(1, 30))


# --- tokenisers --------------------------------------------------------------------------


def test_words_are_runs_of_letters_and_digits():
    assert words("FY2018 capex (3M), don't stop_loss; Umsatz über €5") == [
        "FY2018",
        "capex",
        "3M",
        "don",
        "t",
        "stop",
        "loss",
        "Umsatz",
        "über",
        "5",
    ]


def test_tokens_keep_figures_and_compound_words_whole():
    assert tokens("Year-end Revenue was $1,577.00 in 2019, up 3%.") == [
        "year-end",
        "revenue",
        "was",
        "1,577.00",
        "in",
        "2019",
        "up",
        "3",
    ]
    assert content_words("The tenant may terminate the lease per Section 12 within 30 days.") == [
        "tenant",
        "terminate",
        "lease",
        "section",
        "days",
    ]


def test_enumerations_start_pieces_only_when_asked():
    text = "The Customer shall (a) pay every invoice; (b) give notice (in writing); and (iv) keep records."
    assert sentences(text) == [text]
    assert sentences(text, clauses=True, enumerations=True) == [
        "The Customer shall",
        "(a) pay every invoice;",
        "(b) give notice (in writing);",
        "and",
        "(iv) keep records.",
    ]


def test_paragraphs_end_a_piece_only_when_asked_and_not_where_a_sentence_runs_on():
    """A Pew report's chart credit ("... World”, "PEW RESEARCH CENTER") ran into the next paragraph's sentence, and
    a chart's labels into its question: 15% of 742 sentences of 22 development briefs ran text of two blocks together.
    A paragraph going on over a page or column break (after a function word, a comma or a hyphen) stays whole."""
    credit = (
        "Note: Don’t know responses not shown. “Americans and Germans Differ in Their Views of Each Other and the "
        "World”\n\nPEW RESEARCH CENTER\n\nGermans view their country’s defense spending differently."
    )
    assert sentences(credit, paragraphs=True) == [
        "Note: Don’t know responses not shown.",
        "“Americans and Germans Differ in Their Views of Each Other and the World”",
        "PEW RESEARCH CENTER",
        "Germans view their country’s defense spending differently.",
    ]
    assert len(sentences(credit)) == 2  # by default, as retrieval and lookups read it
    for runs_on in (
        "Benefits will be distributed in accordance with the\n\nParticipant’s earlier election.",
        "Net sales rose in Europe,\n\nAsia and the Americas.",
        "The plan covers long-\n\nTerm incentives of every employee.",
        "The trial ran in the spring.\n\nits sensors were read every night.",  # a small letter: no new piece
    ):
        assert len(sentences(runs_on, paragraphs=True)) == len(sentences(runs_on)), runs_on


@pytest.mark.parametrize(
    ("sentence", "question"),
    [
        ("How important do you think these military bases are for [U.S./German] national security?", True),
        ("b. Has the Risk Management Plan been significantly changed since last year’s submission?”", True),
        ("The survey asked whether the bases are important.", False),
        ("Is it? The bases are important.", False),  # a question inside a statement's text ends no statement
    ],
)
def test_a_question_asks_instead_of_stating(sentence, question):
    assert is_question(sentence) is question


@pytest.mark.parametrize(
    ("sentence", "leans"),
    [
        ("During that period the utility's leakage team carried out its usual acoustic survey.", True),
        ("It is fed through a single inlet with a flow meter.", True),
        ("These results hold for every pipe material.", True),
        ("However, few respondents agree.", True),
        ("In addition, third party expenses increased $23.8 million.", True),
        ("This Agreement ends on the last day of the Term.", False),  # the document names itself
        ("This report evaluates a low-cost method for detecting leaks.", False),
        ("In addition to sampling error, question wording can introduce bias.", False),  # no connective: a phrase
        ("As a result of the exchange offer, the segment is reported as discontinued.", False),
        ("Thereafter the plan was frozen.", False),
    ],
)
def test_a_sentence_that_refers_back_leans_on_the_one_before(sentence, leans):
    assert refers_back(sentence) is leans


# --- tables of contents ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        FILING_CONTENTS,  # BOEING_2022_10K p.2
        "Page\nReport of Independent Registered Public Accounting Firm 37\nConsolidated Statements of Operations 38\n"
        "Consolidated Statements of Cash Flows 40\nNotes to Consolidated Financial Statements 43",
        "Executive Summary .......... 1\nIntroduction .......... 1\nHamilton County .......... 2\nTowns .......... 8",
        # one line: a contents page that sentence splitting ran together (NIKE_2021_10K p.2)
        "Business 1 General 1 Products 1 Sales and Marketing 2 United States Market 2 International Markets 3",
    ],
)
def test_a_table_of_contents_is_recognised(text: str) -> None:
    assert is_contents(text)


@pytest.mark.parametrize(
    "text",
    [
        # names and counts, not pages: the numbers go up and down (a board's meetings attended)
        "1 Mr. O.P. Vaish Non-Executive & Independent 3\n2 Mr. Lalit Bhasin Non-Executive & Independent 2\n"
        "3 Mr. Anup N. Kothari Non-Executive & Independent 3",
        "Item 1. Business 1\nItem 1A. Risk Factors 6",  # two lines are not enough to tell
        "The Company operates 18 plants.\nIt employs 2,400 people in 12 countries.\nSales rose by 4 percent.",
        "Net sales | 5,349 | 4,858\nCost of sales | 2,901 | 2,640\nGross profit | 2,448 | 2,218",  # table rows
        "Nearly half of those ages 30 to 49 (47%) follow the news, as do 61% of those 50 and older.",
        "Of our 20 largest suppliers, 5 supply 48% and 3 supply 10 of our 12 product categories.",
    ],
)
def test_other_text_is_no_table_of_contents(text: str) -> None:
    assert not is_contents(text)


@pytest.mark.parametrize(
    ("sentence", "points"),
    [
        ("For more information on the risks related to our suppliers, see Item 1A - Risk Factors.", True),
        ("For information regarding these matters, see Critical Accounting Policies.", True),
        ("For a detailed discussion of the markets served by 3M's segments, see Item 1, Business Segments.", True),
        ("See Note 14, Segment and Geographic Information, for a disaggregation of revenue.", True),
        ("Refer to Note 14 in the accompanying Notes for additional information.", True),
        ("Part III is incorporated by reference from the Proxy Statement.", True),
        ("63 Consolidated Statements of Comprehensive Income ..........................", True),
        ("Section 3 presents the detection and localisation results, and Section 4 draws conclusions.", True),
        ("Table 1 summarises the results by pipe material.", True),
        ("The rest of this paper is organized as follows.", True),
        (
            "The following table summarizes our future estimated cash payments under existing contractual obligations:",
            True,
        ),
        ("The graph below compares the cumulative total shareholder return on our common stock.", True),
        ("The following is a summary of the Company's significant accounting policies.", False),
        ("The table stakes in this market are high.", False),
        ("Section 12 survives the termination of this Agreement.", False),
        ("Seeking growth, we expanded into twelve markets.", False),
        ("See-through packaging is sold in every segment.", False),
        ("For fiscal 2023, revenue rose 5% to $46.3 billion.", False),
        ("Our main exposure to market risk relates to interest rates.", False),
    ],
)
def test_a_pointer_only_sends_the_reader_elsewhere(sentence, points):
    assert is_pointer(sentence) is points


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("Object Storage Service Product Introduction 9 Basic Concepts", True),
        ("Lockheed Martin Corporation Notes to Consolidated Financial Statements", True),
        ("/s/ Ernst & Young LLP Tysons, Virginia January 26, 2023", True),
        ("Form 10-K Summary 100 Signatures 102", True),
        ("Little Rock AR01 2.", False),  # a lookup's answer ends like a sentence
        ("Management's Discussion and Analysis of Financial Condition and Results of Operations.", True),
        ("Certain Relationships and Related Transactions, and Director Independence 106 Item 14.", True),
        ("(a) Evaluation of Disclosure Controls and Procedures.", True),
        ("(b) Management’s Report on Internal Control Over Financial Reporting.", True),  # its marker aside
        ("1. The Supplier shall provide the Services.", False),
        ("Mr. Vachris was Senior Vice President, Real Estate Development, from August 2015 to June 2016.", False),
        ("Net sales rose 5% in the Americas.", False),
        ("Quantitative and Qualitative Disclosures about Market Risk 51 ITEM 8.", True),
        ("Disclosure Regarding Foreign Jurisdictions that Prevent Inspections 104 PART III Item 10.", True),
        ("Net sales rose 5% in the Americas", False),
        ("Teaching", False),  # one word: a fragment, not a title to leave out
    ],
)
def test_a_title_is_no_statement(line, title):
    assert is_title(line) is title


@pytest.mark.parametrize(
    ("piece", "fragment"),
    [
        ("These forward-looking statements include, but are not limited to, statements regarding", True),
        ("our content and marketing investments, including investments in original programming", True),
        ("(vi) the Notes to Consolidated Financial Statements.", True),
        ("a) designed such disclosure controls and procedures, or caused them to be designed", True),
        ("and b) any fraud, whether or not material, that involves management.", True),
        ("Net sales rose 5% in the Americas.", False),
        ("(a) The Customer shall pay each invoice within 30 days.", False),
        ('The Company considers such investments to be "cash equivalents."', False),
        ("Is the notice period 30 days?", False),
    ],
)
def test_a_fragment_needs_the_text_around_it(piece, fragment):
    assert is_fragment(piece) is fragment


@pytest.mark.parametrize(
    ("sentence", "run"),
    [
        ("% who say ... Poor Not good Good Excellent 39 58 Total 36 9 75 22 Rep/Lean Rep", True),
        ("Operating leases 2023 $316 2024 259 2025 224 2026 191 2027 151 Thereafter 1,036", True),
        ("(Dollars in millions) 2019 2020 2021 2022 2023 Thereafter Total", True),
        ("We set 6 K-values (1, 5, 10, 20, 50, 100) for RE tasks.", False),
        ("Revenue was $4.2 billion in 2021, 2022 and 2023 and rose 12% in 2024.", False),
        ("Nearly half of those ages 30 to 49 (47%) follow the news, as do 61% of those 50 and older.", False),
        ("% who say the Islamic religion is more likely than others to encourage violence …", True),
        ("% CHANGE EXCLUDING", True),
    ],
)
def test_a_charts_labels_and_values_are_no_sentence(sentence, run):
    assert is_chart_text(sentence) is run


@pytest.mark.parametrize(
    ("sentence", "heading"),
    [
        ("Use of Estimates The preparation of financial statements requires estimates.", "Use of Estimates"),
        ("PEW RESEARCH CENTER The latest national survey finds that 80% agree.", "PEW RESEARCH CENTER"),
        ("Risks Related to Our Business The ongoing pandemic has hurt our sales.", "Risks Related to Our Business"),
        ("Refer to Note 14 — Risk Management and Derivatives in the accompanying Notes.", ""),
        ("This Appendix A may be updated by the Administrator from time to time.", ""),
        ("Apple Inc. The company designs phones.", ""),
        ("In Q1 2017, we combined stock-based compensation with operating expenses.", ""),
    ],
)
def test_a_heading_run_into_a_sentence_is_found(sentence, heading):
    assert run_in_heading(sentence) == heading


@pytest.mark.parametrize(
    ("sentence", "field"),
    [
        ("Yes ☒ No ☐ Indicate by check mark whether the registrant is a shell company.", True),
        ("Large accelerated filer þ Accelerated filer ¨ Non-accelerated filer ¨", True),
        ("Henrik Bellh¨auser, Charlotte Dignath, and Maria Theobald.", False),  # an umlaut set apart
        ("The registrant is a large accelerated filer.", False),
    ],
)
def test_a_form_field_holds_check_boxes(sentence, field):
    assert is_form_field(sentence) is field


@pytest.mark.parametrize(
    ("sentence", "standard"),
    [
        (
            "Those standards require that we plan and perform the audit to obtain reasonable assurance about whether the "
            "financial statements are free of material misstatement.",
            True,
        ),
        ("Based on my knowledge, this report does not contain any untrue statement of a material fact.", True),
        ("These forward-looking statements include, but are not limited to, statements regarding", True),
        ("The accompanying notes are an integral part of these consolidated financial statements.", True),
        ("The registrant's other certifying officer and I have disclosed, based on our most recent evaluation:", True),
        (
            "A company’s internal control over financial reporting is a process designed to provide reasonable assurance.",
            True,
        ),
        # An auditor's report and management's report on internal control (BOEING_2022_10K pp.119, 126)
        ("These financial statements are the responsibility of the Company's management.", True),
        (
            "Our responsibility is to express an opinion on the Company's financial statements based on our audits.",
            True,
        ),
        (
            "Our management is responsible for establishing and maintaining adequate internal control over financial "
            "reporting, as such term is defined in Exchange Act Rules 13a-15(f).",
            True,
        ),
        ("We conducted our audits in accordance with the standards of the PCAOB.", True),
        ("Our audits included performing procedures to assess the risks of material misstatement.", True),
        ("We are a public accounting firm required to be independent with respect to the Company.", True),
        ("Our auditors, Deloitte & Touche LLP, have served as the Company's auditor since 1959.", False),
        ("Customer is responsible for the accuracy of the Customer Data and for the use of the Services.", False),
        ("Net sales rose 5% to $46.3 billion, led by the Americas.", False),
    ],
)
def test_a_filings_standard_language_is_boilerplate(sentence, standard):
    assert is_boilerplate(sentence) is standard
