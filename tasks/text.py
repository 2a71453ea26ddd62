"""Text helpers shared by every stage: one of each, so chunking, retrieval and synthesis agree.

- ``split_sentences`` / ``sentences``: the one sentence splitter (spans or strings), with options
  for query clauses, line breaks and paragraphs; a table row line is always a piece of its own.
- ``STOPWORDS``: the one list of English function words.
- ``normalize_space``: runs of whitespace as one space, ends trimmed.
- ``join_heading`` / ``split_heading``: the heading path format, ``"12 Termination > 12.2 Notice"``.
- ``evidence_label`` / ``find_labels`` / ``LABEL_PATTERN``: the evidence labels ``c1``, ``c2``...
- ``words`` and ``tokens``: two word tokenisers for two jobs. ``words`` are search terms, runs of
  letters and digits (nothing else may reach the full-text query parser); ``tokens`` keep figures
  whole ("1,577.00") and words with an apostrophe or hyphen ("year-end"), so a claim's numbers
  can be checked against its evidence.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable

_ABBREVIATIONS = frozenset(
    "inc corp co ltd llc plc no nos mr mrs ms dr prof st jr sr vs cf al approx dept est fig "
    "figs sec art ch para pp p vol rev ref op jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# A sentence ends at ".", "!" or "?" (closing quotes and brackets included) followed by
# whitespace; ``word`` is the token the terminator closes, ``next`` the first character after.
_SENTENCE_END = re.compile(r"(?<!\S)(?P<word>\S*?)(?P<stop>[.!?]+)[\"'\u201d\u2019)\]]*(?=\s+(?P<next>\S))")
_CLAUSE_END = re.compile(r"[;:?!]+[\"'\u201d\u2019)\]]*(?=\s)")
# A blank line (extraction joins its blocks by one) before a capital, a digit or an opening quote; ``goes_on`` says
# where the sentence runs on over it.
_PARAGRAPH = re.compile(r"(?<=\S)[ \t]*\n[ \t]*\n\s*(?=[A-Z0-9\"'\u201c\u2018(\[$])")
_LINE_END = re.compile(r"\n")
_ITEM = r"(?:[a-zA-Z]|[ivxIVX]{2,5}|\d{1,2})"  # what numbers a list's item: "a", "iv", "2"
_ENUMERATION = re.compile(rf"(?<=\s)\({_ITEM}\)(?=\s)")  # "(a)", "(iv)", "(2)"
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+")  # initials and dotted abbreviations: "J.", "e.g.", "U.S."
# A table row, "label | cell | cell" (citesum.tasks.tables): a line with a "|" between spaces.
_TABLE_ROW = re.compile(r"^.*(?:^|[ \t])\|(?:[ \t]|$).*$", re.MULTILINE)
_CELL_SEPARATOR = re.compile(r"(?:^|[ \t])\|(?=[ \t]|$)", re.MULTILINE)


def split_sentences(
    text: str, *, clauses: bool = False, lines: bool = False, enumerations: bool = False, paragraphs: bool = False
) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text``, trimmed of whitespace.

    Together the spans hold every non-whitespace character. A period after an
    abbreviation ("Inc.", "No. 5"), an initial or a dotted abbreviation ("e.g.") or one
    followed by a lower-case word does not end a sentence; "12.2" has no space to split at.

    ``clauses``: a ";", ":", "?" or "!" followed by whitespace ends a piece whatever comes
    next. Retrieval splits a question this way, so that its request and its topics are
    searched apart: "...as of FY2018: what is ...", "...in 2023? round your answer...".
    ``lines``: a line break ends a piece too, so a table's rows are pieces of their own.
    ``enumerations``: an item marker such as "(a)", "(iv)" or "(2)" after whitespace starts a
    piece, so a long contract sentence can be quoted item by item.
    ``paragraphs``: a blank line before a capital, a digit or an opening quote ends a piece, unless the text before
    it stops on a comma, a hyphen or a function word (a paragraph going on over a page or column break). A chart's
    title or credit line, a label or a heading then stands apart from the sentence after it ("... World”
    PEW RESEARCH CENTER Germans view their country’s ..."); a brief needs that, a lookup not always (README).

    A table row line (``label | cell | cell``) is always a piece of its own: rows hold
    no sentence punctuation, and would otherwise run together into one "sentence".
    """
    cuts = {m.end() for m in _SENTENCE_END.finditer(text) if _ends_sentence(m)}
    if paragraphs:
        cuts.update(m.start() for m in _PARAGRAPH.finditer(text) if not goes_on(text[: m.start()], text[m.end() :]))
    rows = table_rows(text)
    if rows:
        starts = [start for start, _ in rows]  # rows are lines: in order, apart
        cuts = {cut for cut in cuts if not _inside_row(rows, starts, cut)}
        cuts.update(cut for row in rows for cut in row)
    if clauses:
        cuts.update(m.end() for m in _CLAUSE_END.finditer(text))
    if lines:
        cuts.update(m.end() for m in _LINE_END.finditer(text))
    if enumerations:
        cuts.update(m.start() for m in _ENUMERATION.finditer(text))
    ordered = sorted(cuts)
    bounds = zip([0, *ordered], [*ordered, len(text)], strict=True)
    return [span for start, end in bounds if (span := _trim(text, start, end))]


def _inside_row(rows: list[tuple[int, int]], starts: list[int], cut: int) -> bool:
    """Whether ``cut`` falls strictly inside one of ``rows`` (``starts``: their starts, ascending)."""
    i = bisect_left(starts, cut) - 1
    return i >= 0 and cut < rows[i][1]


def sentences(
    text: str, *, clauses: bool = False, lines: bool = False, enumerations: bool = False, paragraphs: bool = False
) -> list[str]:
    """The sentences of ``text`` as strings (see ``split_sentences``)."""
    spans = split_sentences(text, clauses=clauses, lines=lines, enumerations=enumerations, paragraphs=paragraphs)
    return [text[start:end] for start, end in spans]


def table_rows(text: str) -> list[tuple[int, int]]:
    """Spans of the lines of ``text`` that are table rows, ``label | cell | cell`` (``citesum.tasks.tables``):
    lines with a "|" between spaces next to another such line with as many cells. A table has two rows or
    more (a header and a row), so a lone "3M | 2018 Form 10-K" in running text is no row."""
    lines = [(m.start(), m.end(), len(_CELL_SEPARATOR.findall(m.group()))) for m in _TABLE_ROW.finditer(text)]
    rows = []
    for i, (start, end, cells) in enumerate(lines):
        before = i > 0 and lines[i - 1][2] == cells and _adjacent(text, lines[i - 1][1], start)
        after = i + 1 < len(lines) and lines[i + 1][2] == cells and _adjacent(text, end, lines[i + 1][0])
        if before or after:
            rows.append((start, end))
    return rows


_TITLE_SMALL_WORDS = frozenset(
    "a about an and as at but by for from in into nor of on or over per the to under via vs with".split()
)
_LOWER_CASE_WORD = re.compile(r"(?<![\w'\u2019-])[a-z][\w'\u2019-]*")  # not the "s" of "Management's"


def _capitalised(text: str) -> bool:
    """Every word capitalised but a title's small words: "Sales and Marketing", not "over the next"."""
    return all(word in _TITLE_SMALL_WORDS for word in _LOWER_CASE_WORD.findall(text))


# Words that open a sentence after a heading run into it: "Use of Estimates The preparation of ...".
_OPENERS = frozenset("The We Our In As At For This These Each All If When Since During On It Its There".split())


def run_in_heading(sentence: str) -> str:
    """The heading a sentence begins with, run into it by extraction ("Use of Estimates" in "Use of Estimates The
    preparation of financial statements ... requires ..."), else "": two words or more, every one capitalised but a
    title's small words, then a word that opens sentences ("The", "We", "In", ...) before a word in lower case.
    ``sentence`` is whitespace-normalised; the heading is its first characters."""
    parts = sentence.split()
    for k, word in enumerate(parts[:25]):
        if k >= 2 and word in _OPENERS and k + 1 < len(parts) and parts[k + 1][:1].islower():
            heading = " ".join(parts[:k])
            closed = parts[k - 1].lower() in _TITLE_SMALL_WORDS or heading[-1] in ".:;,"  # "Apple Inc." is no heading
            return "" if closed else heading
        if not (
            word[:1].isupper() or word[:1].isdigit() or word.lower() in _TITLE_SMALL_WORDS or word in "&-\u2013\u2014"
        ):
            return ""
    return ""


# A line of a table of contents: words, then a page number after a space or dot leaders ("Item 2. Properties 18");
# no "|" or "$" in it, which mark a table row or an amount.
_CONTENTS_LINE = re.compile(r"^(?=.*[^\W\d_])[^|$]*?(?:\.{3,}|…+|\s)\s*(\d{1,3})$")
# One entry of a table of contents run into the next on one line: "Sales and Marketing 2 United States Market 2".
_CONTENTS_ENTRY = re.compile(r"([^\W\d_][^\d|$]*?)\s(\d{1,3})(?=\s+[^\W\d_]|$)")


def is_contents(text: str) -> bool:
    """A table of contents: three or more lines, four in five of them (or more) name an entry and end in its page
    number, and the numbers never fall. The last test tells it from a list of names and counts (directors and their
    meetings attended, officers and their years), whose numbers go up and down. Or one line that runs four entries or
    more together, four fifths of its text ("Business 1 General 1 Products 1 Sales and Marketing 2 ...")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) == 1:
        entries = [
            (name, page) for name, page in _CONTENTS_ENTRY.findall(lines[0]) if name[0].isupper() and _capitalised(name)
        ]
        pages = [int(page) for _, page in entries]
        covered = sum(len(name) + len(page) + 1 for name, page in entries)
        return len(pages) >= 4 and pages == sorted(pages) and covered >= 0.8 * len(lines[0])
    pages = [int(m.group(1)) for line in lines if (m := _CONTENTS_LINE.match(line))]
    return len(pages) >= 3 and len(pages) >= 0.8 * len(lines) and pages == sorted(pages)


# A sentence that only sends the reader elsewhere: "For more information, see Item 1A", "For a description of our legal
# proceedings, see Note 13", "See Note 1 for ...", "... is incorporated herein by reference", a paper's road map
# ("Section 3 presents the results", "The rest of this paper is organised as follows"), a table's lead-in ("The
# following table summarizes our contractual obligations:", "The graph below compares ..."), a contents line's dots.
_POINTER = re.compile(
    r"^(?:also,\s*)?(?:for\s+(?:an?\s+)?(?:more\s+|additional\s+|further\s+|detailed\s+|complete\s+|full\s+)*"
    r"(?:information|discussion|description|details|explanation)\b|see\s|refer\s+to\s|"
    r"please\s+refer\b|reference\s+is\s+made\b|"
    r"(?:section|chapter|appendix|table|figure|fig\.)\s+[\dIVX]+[a-z]?\s+(?:describes|presents|discusses|summari[sz]es|"
    r"shows|lists|gives|draws|introduces|reports|provides|outlines|illustrates)\b|"
    r"(?:the\s+)?(?:rest|remainder)\s+of\s+(?:this|the)\s+(?:paper|report|document|article)\s+is\s+organi[sz]ed\b|"
    r"the\s+(?:following|accompanying)\s+(?:table|chart|graph|schedule)s?\b|"
    r"the\s+(?:table|chart|graph|schedule)s?\s+(?:below|above)\b)"
    r"|\bincorporated\s+(?:herein\s+)?by\s+reference\b|\.{5,}|(?:\.\s){4,}",
    re.IGNORECASE,
)


def is_pointer(sentence: str) -> bool:
    """A sentence that points elsewhere instead of saying something: nothing to quote in a brief."""
    return bool(_POINTER.search(sentence.strip()))


_QUESTION_END = re.compile(r"\?[\"'\u201d\u2019)\]]*$")


def is_question(sentence: str) -> bool:
    """A sentence that asks instead of stating: a survey's wording ("How important do you think these military bases
    are for [U.S./German] national security?"), a form's or a FAQ's question. A brief that quotes it reports nothing."""
    return bool(_QUESTION_END.search(sentence.strip()))


# What a sentence may open on and still be read alone: a demonstrative naming the document or a part of it.
_SELF = (
    r"(?:agreement|report|document|section|article|chapter|paper|study|survey|analysis|policy|plan|form|prospectus|"
    r"guide|manual|handbook|datasheet|presentation|letter|amendment|statement|annual|quarterly)\b"
)
_REFERS_BACK = re.compile(
    r"^(?:(?:it|its|they|their|them|he|she|his|her|such|however|therefore|thus|hence|moreover|furthermore|"
    r"additionally|also|consequently|accordingly|similarly|likewise|nevertheless|nonetheless|otherwise|instead|"
    r"meanwhile|then|besides)\b"
    r"|(?:as a result|in addition|in contrast|by contrast|on the other hand|as such),|(?:of these|of those|of which)\b"
    rf"|(?:this|that|these|those)\b(?!\s+{_SELF})"
    r"|(?:during|in|at|for|after|before|from|under|with|by|over|since|until|within|unlike|like)\s+"
    rf"(?:that|those|these|such)\b(?!\s+{_SELF}))",
    re.IGNORECASE,
)


def refers_back(sentence: str) -> bool:
    """A sentence that leans on the one before it: it opens on a pronoun ("It is fed through a single inlet"), a
    demonstrative that does not name the document ("These results", "During that period"; not "This Agreement") or
    a connective ("However,", "In addition,"). Quoted alone, it does not say what it speaks of."""
    return bool(_REFERS_BACK.match(sentence.strip()))


def _adjacent(text: str, end: int, start: int) -> bool:
    """Only line breaks (a blank line at most) between two lines."""
    return text[end:start].count("\n") <= 2 and not text[end:start].strip()


def _ends_sentence(match: re.Match[str]) -> bool:
    if match["next"].islower():
        return False
    if match["stop"] != ".":
        return True
    word = match["word"].lstrip("([{\"'\u201c\u2018")
    return word.lower() not in _ABBREVIATIONS and not _DOTTED.fullmatch(word + ".")


_WHOLE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")  # a full stop, closing quotes or brackets after it


def goes_on(before: str, after: str) -> bool:
    """``after``, a block's text, goes on with the sentence the block ``before`` it stops inside: ``before`` ends on no
    full stop, and ``after`` begins in lower case or ``before`` ends on a comma, a hyphen or a function word (a
    paragraph broken by a page or column break: "... in accordance with the" and "Participant's earlier election.")."""
    before, after = before[-200:].rstrip(), after.lstrip()
    if not before or not after or _WHOLE_END.search(before):
        return False
    last = before.split()[-1]
    return after[0].islower() or last[-1] in ",-\u2013" or last.lower() in STOPWORDS


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


# English function words: dropped from search queries, from the words a generated sentence
# must share with its evidence, and from the terms that name a topic.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each either few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just may me might more most
    must my myself no nor not now of off on once only or other our ours ourselves out over own per same shall she
    should so some such than that the their theirs them themselves then there these they this those through to
    too under until up upon very was we were what when where which while who whom why will with within without
    would you your yours yourself yourselves""".split()
)


def normalize_space(text: str) -> str:
    """Every run of whitespace (line breaks included) as one space, without leading or trailing space."""
    return " ".join(text.split())


HEADING_SEPARATOR = " > "


def join_heading(parts: Iterable[str]) -> str:
    """A heading path from its headings, outermost first: ``"12 Termination > 12.2 Notice"``."""
    return HEADING_SEPARATOR.join(parts)


def split_heading(path: str) -> list[str]:
    """The headings of a heading path, outermost first; empty parts dropped, "" gives []."""
    return [part.strip() for part in path.split(HEADING_SEPARATOR) if part.strip()]


# Evidence is labelled c1, c2, ... in the order it is given to the synthesizer; models answer
# in any case ("[C2]"), so labels are found case-insensitively and compared in lower case.
LABEL_PATTERN = r"c\d+"
_LABEL = re.compile(LABEL_PATTERN, re.IGNORECASE)


def evidence_label(position: int) -> str:
    """The label of the evidence at ``position``, counted from 1: ``evidence_label(3) == "c3"``."""
    return f"c{position}"


def find_labels(text: str) -> list[str]:
    """Every evidence label in ``text``, in order, lower-cased: ``"[C1][c3]"`` gives ``["c1", "c3"]``."""
    return [label.lower() for label in _LABEL.findall(text)]


_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"[a-z][a-z'-]+|\d[\d,.]*\d|\d")


def words(text: str) -> list[str]:
    """Runs of letters and digits, as written: the terms of a search ("FY2018", "don", "t")."""
    return _WORD.findall(text)


def tokens(text: str) -> list[str]:
    """Lower-case words of two letters or more (with inner ' or -) and numbers ("1,577.00")."""
    return _TOKEN.findall(text.lower())


def content_words(text: str) -> list[str]:
    """The tokens that are neither stop words nor numbers."""
    return [t for t in tokens(text) if t not in STOPWORDS and not t[0].isdigit()]


# A contents line's page number and the next entry's label: "Risk Factors 10 ITEM 1B.", "... 104 PART III Item 10."
_CONTENTS_LABEL = re.compile(r"\s\d{1,3}(?:\s+part\s+[ivx]+)?\s+(?:item|note|article|section)\s+\d+[a-z]?\.$", re.I)


def is_title(sentence: str) -> bool:
    """A line set as a title, not a statement: no closing punctuation, and four in five of its words or more (stop
    words and numbers aside) capitalised: a running header ("Object Storage Service Product Introduction 9 Basic
    Concepts"), a statement's title, a signature block, a contents line without dot leaders. Or a title closed by a
    full stop: four capitalised words or more, every word capitalised but a title's small words ("Management's
    Discussion and Analysis of Financial Condition and Results of Operations.", a paper's author list); a verb in lower
    case ("Mr. Vachris was Senior Vice President, Real Estate Development.") makes it a statement. Or a contents line
    run into the next entry's label ("Disclosure Regarding Foreign Jurisdictions that Prevent Inspections 104 PART III
    Item 10."). An item's marker before it aside ("(b) Management's Report on Internal Control ...")."""
    text = _ITEM_MARKER.sub("", sentence.strip(), count=1)
    if not text:
        return False
    if _CONTENTS_LABEL.search(text):
        return True
    named = [w for w in words(text) if w[0].isalpha() and w.lower() not in STOPWORDS]
    if text[-1] in ".?!;:":
        return text[-1] == "." and len(named) >= 4 and _capitalised(text)
    return len(named) >= 2 and sum(w[0].isupper() for w in named) >= 0.8 * len(named)


# The standard language of a securities filing, the same in every one: the auditor's report, the officers'
# certifications, the notice on forward-looking statements, consents, signatures, the cover page's questions.
_BOILERPLATE = re.compile(
    r"forward-looking statements?|integral part of (?:these|this|the)\b[^.]{0,60}(?:statements?|information)"
    r"|public company accounting oversight board|present fairly, in all material respects|free of material misstatement"
    r"|based on my knowledge|pursuant to the requirements of (?:section 13 or 15\(d\) of )?the securities exchange act"
    r"|consent to the incorporation by reference|signed original of this written statement|indicate by check mark"
    r"|other certifying officers? and I\b|I have reviewed this (?:annual|quarterly) report"
    r"|a company[\u2019']s internal control over financial reporting (?:is|includes)"
    r"|projections of any evaluation of effectiveness to future periods"
    # an auditor's report, management's report on internal control
    r"|statements are the responsibility of|responsibility is to express an opinion|conducted our audits? in accordance"
    r"|responsible for establishing and maintaining adequate internal control|risks? of material misstatement"
    r"|required to be independent with respect to",
    re.IGNORECASE,
)


def is_boilerplate(sentence: str) -> bool:
    """A filing's standard language ("Those standards require that we plan and perform the audit to obtain
    reasonable assurance about whether the financial statements are free of material misstatement.", "Based on my
    knowledge, this report does not contain any untrue statement ...", "These forward-looking statements include
    ..."): every filing says it, so a brief of one says nothing by quoting it."""
    return bool(_BOILERPLATE.search(sentence))


# A check box standing alone: "Yes ☒ No ☐", a filing's cover page in Wingdings ("Yes þ No ¨"), not "M¨oller".
_CHECK_BOX = re.compile(r"(?<!\S)[\u2610\u2611\u2612\u25a1\u00a8\u00fe\u00fd](?!\S)")


def is_form_field(sentence: str) -> bool:
    """A form's field with its check boxes, "Yes ☒ No ☐ Indicate by check mark whether the registrant ...": a
    filing's cover page asks, it states nothing."""
    return bool(_CHECK_BOX.search(sentence))


# Four numbers or more with nothing but spaces between them; prose puts words or punctuation between its figures.
_NUMBER_RUN = re.compile(r"(?<![\w.,$%(])(?:\d+(?:[.,]\d+)*\s+){3,}\d+(?:[.,]\d+)*(?![\w%])")


def is_chart_text(sentence: str) -> bool:
    """A chart's labels and values, or an unrecognised table's cells, read as a sentence: four numbers in a row ("...
    Poor Not good Good Excellent 39 58 Total 36 9 75 22 ...", "Operating leases 2023 $316 2024 259 2025 224", not
    "(1, 5, 10, 20)"), or a label that begins with a percent sign ("% who say the Islamic religion is more likely
    ...", "% CHANGE EXCLUDING"), which no sentence does."""
    return sentence.lstrip().startswith("%") or bool(_NUMBER_RUN.search(sentence))


_ITEM_MARKER = re.compile(rf"^(?:\(?{_ITEM}[.)]|[\u2022\u25aa\u25cf\-\u2013\u2014*])\s+")  # "(vi) ", "a) ", "• "


def is_fragment(sentence: str) -> bool:
    """Part of a sentence, not one: it goes on from text before it (begins in lower case, an item marker aside: "(vi)
    the Notes to Consolidated Financial Statements.", "our content and marketing investments") or stops short of a
    full stop ("These forward-looking statements include, but are not limited to, statements regarding")."""
    text = _ITEM_MARKER.sub("", sentence.strip(), count=1)
    return bool(text) and (text[0].islower() or not _WHOLE_END.search(text))
