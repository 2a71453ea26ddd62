"""The premise check: what a question names that its documents never mention (tasks/summarize/premise.py)."""

from __future__ import annotations

import pytest

from citesum.tasks.summarize.premise import document_words, unmentioned
from citesum.tasks.text import words

SURVEY = (
    "Survey conducted April 25 - May 1, 2018. Most Republicans say Trump's administration has high ethical "
    "standards. Democratic and Republican voters differ; email us for the topline. The Table 1-1 compares methods, "
    "and each market code runs from AR01 to AR02. Netflix streaming was not asked about."
)
PAPER = "We compare GPT-4 with PaLM-2 on MMLU Physics. The search platform is described in Section 2."
SURVEY_WORDS = document_words([{"heading": "Political survey", "text": SURVEY}])
PAPER_WORDS = document_words([{"heading": "Step-Back prompting", "text": PAPER}])
WRITTEN_LOWER = {w for w in words(f"{SURVEY} {PAPER}") if w.islower()}  # what LanceStore.holds_word finds


def is_word(word: str) -> bool:
    return word in WRITTEN_LOWER


def never(word: str) -> bool:
    return False


def named_terms(question: str, is_word=never) -> list[str]:
    """What the question names: what a document holding no word does not mention."""
    return unmentioned(question, frozenset(), is_word)


@pytest.mark.parametrize(
    ("question", "named"),
    [
        # years, alone or in a fiscal or quarter label
        ("How many adults rated the government poor in the survey of May 1 2022?", ["May", "2022"]),
        ("What is the FY2018 capital expenditure for 3M?", ["2018"]),
        ("Which region had the biggest drop in Q22023 revenues?", ["2023"]),
        # a code: two letters and two digits or more; an ordinal or "top2" is none
        ("What is the market name for EPS Code AR03?", ["Code", "AR03"]),
        ("What was filed on 1st July, and what are the top2 items?", ["July"]),
        # names: capitalised after a sentence's first word, a possessive's "s" aside
        ("What score did LLaVa + Step-Back achieve? Who is Biden's rival?", ["LLaVa", "Step", "Back", "Biden"]),
        # acronyms are terms of art, not names
        ("What is the FY2016 COGS and EBITDA for Microsoft?", ["2016", "Microsoft"]),
        # a quoted example of a format names nothing; a question in capitals says nothing of names
        ("List the years of the pie chart, formatted like ['2006', '2007'].", []),
        ("WHAT IS ITC LIMITED LOGO COLOR?", []),
    ],
)
def test_what_a_question_names(question, named):
    assert named_terms(question) == named


def test_a_capitalised_word_the_store_writes_in_lower_case_is_no_name():
    question = "What is the Email address of the Search Platform for Chinese respondents?"
    assert named_terms(question) == ["Email", "Search", "Platform", "Chinese"]
    assert named_terms(question, is_word) == ["Chinese"]


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        # the documents' own terms, in any case, a possessive or joined ("Table1" is "Table 1-1")
        ("Among adults surveyed April 25 - May 1, 2018, how many rated Trump's ethics poor?", []),
        ("What does Table1-1 compare?", []),
        # a word one edit from a document's is that word misspelt
        ("How many Demoncratic and Republicans were asked about Neflix?", []),
        # a year, a code or a name no document mentions
        ("How many adults rated Trump's ethics poor in the survey of April 25 - May 1 2022?", ["2022"]),
        ("What is the market name for EPS Code AR03?", ["AR03"]),  # a code one character off is another code
        ("What share of Chinese respondents trust Oxford?", ["Chinese", "Oxford"]),
    ],
)
def test_what_no_document_mentions(question, missing):
    assert unmentioned(question, SURVEY_WORDS, is_word) == missing


def test_only_the_given_documents_count():
    question = "What score did GPT-4 achieve on MMLU Physics in 2018?"
    assert unmentioned(question, PAPER_WORDS, is_word) == ["2018"]
    assert unmentioned(question, PAPER_WORDS | SURVEY_WORDS, is_word) == []


def test_the_store_is_asked_only_about_names_the_documents_do_not_mention():
    asked = []

    def recording(word: str) -> bool:
        asked.append(word)
        return is_word(word)

    question = "Did Trump's Democratic rivals trust Oxford or the Platform in 2018?"
    assert unmentioned(question, SURVEY_WORDS, recording) == ["Oxford"]
    assert asked == ["oxford", "platform"]
