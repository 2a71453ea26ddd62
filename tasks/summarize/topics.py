"""Topics for a summary without a question: from headings, else from clusters.

A document's top-level sections come from its heading paths, below its title: a
heading that the document's chunks share from some chunk to the last, ``TITLE_SHARE``
of them or more (a filing's running "3M COMPANY" under a cover page of its own), and
likewise a heading below it ("FORM 10-K > BEST BUY FISCAL 2019 FORM 10-K"). Chunks
before the title are front matter. With at least ``MIN_TOPICS`` sections, consecutive
sections are grouped into at most ``MAX_TOPICS`` topics so nothing is left out, each
titled by its sections' names, or by the first and the last when the names would not
fit a line; otherwise chunk embeddings are clustered and each cluster is named by its
characteristic terms. A section over more than ``DOMINANT_SHARE`` of its document's chunks
is no section among others but the document's body under a heading taken for its title
(a filing's "FORM 10-K" over 871 of 939 chunks, a paper's figure label "Filter" set large
over its last 173): its subsections take its place, again while one dominates.

A reference list ("References", "Bibliography") is no topic: its entries are to be looked up, not briefed.
A document's appended material (``appended_from``: from the first chunk past its first quarter that opens with an
exhibit's, annex's, appendix's or schedule's label alone, "Exhibit 10.13", "EXHIBIT 32.1", "Annex 2") is one topic of
its own, titled "Appended: " and its labels, and takes no share by size: a filing's exhibits (Boeing's 53-page
deferred compensation plan, 29% of its chunks) took two and a half of its brief's eight topics. An exhaustive summary
still reads every section.
A topic is titled by its sections' names but the weak ones (``weak_title``: "Yes", "1", a title's second line, a
cover page's form line); a topic with no other, at the start of its document, is its front matter.

A part that holds only its title, or fewer than ``HANDFUL`` words besides its
headings, is not a section: it is neither a topic nor a part of an exhaustive
summary. Each topic keeps the chunks it stands for (its sections', or its
cluster's): its evidence is drawn from them first, and from the rest of its
documents only when they hold fewer than ``SHORT_TOPIC_WORDS`` words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citesum.tasks.text import content_words, join_heading, split_heading, words

MIN_TOPICS = 5
MAX_TOPICS = 8
TITLE_SHARE = 0.9  # a heading over this share of a document's chunks, from one chunk to the last, is its title
DOMINANT_SHARE = 0.5  # a section over more of its document's chunks is split into its subsections
TITLE_CHARS = 80  # a topic title longer than a line names its first and last sections only
HANDFUL = 5  # words besides the headings: fewer, and a part is a title or a stray line, not a section
SHORT_TOPIC_WORDS = 60  # about three sentences: a topic with less text takes evidence from elsewhere too
FRONT_MATTER = "(front matter)"  # text before the first heading, or under the title alone
_NUMBERING = re.compile(r"^\s*(?:section\s+|article\s+)?[\dIVXivx]+(?:\.\d+)*[.)]?\s+", re.IGNORECASE)
_LETTERED = re.compile(r"^\s*\(?[a-z][.)]\s+")  # "b. ", "(c) "
_ROMAN = re.compile(r"^[ivxlc]+$", re.IGNORECASE)
_FORM_ANSWERS = frozenset({"yes", "no", "none", "n/a", "not applicable"})
# A title's second line ("AND CONDITIONS"), and a filing's cover-page fields: its address, telephone number, periods.
_CONTINUED = re.compile(r"(?:and|or|of|to|by|with|from)\b", re.IGNORECASE)
_COVER_FIELD = re.compile(
    r"\(\d{3}\)\s*-?\d{3}-\d{4}"  # a telephone number
    r"|^\d+\s[\w .,'-]*\b(?:Street|Avenue|Road|Drive|Boulevard|Parkway|Plaza)\b"  # a street address
    r"|transition period|quarterly period ended|date of earliest event|title of each class",
    re.IGNORECASE,
)
# A line that is only the label of something appended: "Exhibit 10.13", "EXHIBIT B", "Annex 2", "SCHEDULE II".
_APPENDED_LABEL = re.compile(r"(?:exhibit|annex|appendix|schedule)\s+(?:\d+(?:\.\d+)*|[a-z]|[ivx]+)\.?", re.IGNORECASE)
APPENDED_AFTER = 0.25  # a label in a document's first quarter opens the document itself (an 8-K's "Exhibit 99.1")
_REFERENCE_LIST = re.compile(
    r"(?:references|bibliography|works cited|literature cited|reference list|cited references)", re.IGNORECASE
)


@dataclass(frozen=True)
class Topic:
    title: str  # shown as the section title of the summary
    query: str  # what retrieval searches for
    document_ids: tuple[str, ...]  # retrieval is restricted to these
    origin: str  # "headings" or "clusters"
    chunk_ids: tuple[str, ...] = ()  # its own chunks (sections or cluster): evidence comes from these first
    short: bool = False  # its own chunks hold too little text: evidence from elsewhere may follow theirs


@dataclass(frozen=True)
class SectionKey:
    document_id: str
    title: str
    path: tuple[str, ...] = ()  # its headings below the document title, outermost first (title is the last)


@dataclass(frozen=True)
class DocumentTitle:
    headings: tuple[str, ...]  # outermost first
    first: int  # ordinal of its first chunk: the chunks before it (a cover page) are front matter


def document_titles(rows: Sequence[Mapping]) -> dict[str, DocumentTitle]:
    """Per document with a title, its title headings (see the module docstring)."""
    chunks: dict[str, list[Mapping]] = {}
    for row in sorted(rows, key=lambda r: r["ordinal"]):
        chunks.setdefault(row["document_id"], []).append(row)
    titles = {}
    for doc, group in chunks.items():
        paths = [split_heading(row["heading"]) for row in group]
        headings: list[str] = []
        first = 0
        while len(paths[-1]) > len(headings):
            prefix = paths[-1][: len(headings) + 1]  # the last chunk's path runs under every title heading
            begin = len(paths)
            while begin > 0 and paths[begin - 1][: len(prefix)] == prefix:
                begin -= 1
            if len(paths) - begin < TITLE_SHARE * len(paths) or all(len(p) == len(prefix) for p in paths[begin:]):
                break  # not the document's, or nothing stands under it: a section, not a title
            headings, first = prefix, group[begin]["ordinal"]
        if headings:
            titles[doc] = DocumentTitle(tuple(headings), first)
    return titles


@dataclass(frozen=True)
class Appended:
    first: int  # ordinal of the chunk its first label opens: sections from there on are appended
    labels: tuple[str, ...]  # as written, in order


def appended_from(rows: Sequence[Mapping]) -> dict[str, Appended]:
    """Per document with appended material, where it begins and its labels: the chunks past the document's first
    ``APPENDED_AFTER`` whose first line, or last heading, is a label alone."""
    chunks: dict[str, list[Mapping]] = {}
    for row in sorted(rows, key=lambda r: r["ordinal"]):
        chunks.setdefault(row["document_id"], []).append(row)
    found = {}
    for doc, group in chunks.items():
        past = group[math.ceil(APPENDED_AFTER * len(group)) :]
        labelled = [(row["ordinal"], label) for row in past if (label := _appended_label(row))]
        if labelled:
            found[doc] = Appended(labelled[0][0], tuple(dict.fromkeys(label for _, label in labelled)))
    return found


def _appended_label(row: Mapping) -> str | None:
    first_line = row["text"].strip().split("\n", 1)[0].strip()
    last_heading = (split_heading(row["heading"]) or [""])[-1]
    return next((line for line in (first_line, last_heading) if _APPENDED_LABEL.fullmatch(line)), None)


def section_path(row: Mapping, titles: Mapping[str, DocumentTitle]) -> tuple[str, ...]:
    """A chunk's headings below its document's title; () for front matter."""
    parts = split_heading(row["heading"])
    title = titles.get(row["document_id"])
    if title is not None:
        if row["ordinal"] < title.first:
            return ()
        parts = parts[len(title.headings) :]
    return tuple(parts)


def top_section(row: Mapping, titles: Mapping[str, DocumentTitle], depth: int = 1) -> SectionKey:
    """The section a chunk belongs to, ``depth`` levels below the document title (or the deepest it has)."""
    path = section_path(row, titles)[:depth]
    return SectionKey(row["document_id"], path[-1], path) if path else SectionKey(row["document_id"], FRONT_MATTER)


def section_rows(rows: Sequence[Mapping]) -> dict[SectionKey, list[Mapping]]:
    """The chunks of each real section (see ``is_section``; top-level, or below a dominant one), in document order."""
    titles = document_titles(rows)
    grouped: dict[SectionKey, list[Mapping]] = {}
    for row in sorted(rows, key=lambda r: (r["document_id"], r["ordinal"])):
        grouped.setdefault(top_section(row, titles), []).append(row)
    grouped = _split_dominant(grouped, titles)
    return {key: group for key, group in grouped.items() if is_section(group)}


def _split_dominant(
    grouped: dict[SectionKey, list[Mapping]], titles: Mapping[str, DocumentTitle]
) -> dict[SectionKey, list[Mapping]]:
    """Each section over more than ``DOMINANT_SHARE`` of its document's chunks replaced by its subsections (its
    chunks one heading deeper; those directly under it stay its own), until none dominates or it has none."""
    sizes = Counter(key.document_id for key, group in grouped.items() for _ in group)
    while True:
        dominant = {
            key
            for key, group in grouped.items()
            if key.title != FRONT_MATTER
            and len(group) > DOMINANT_SHARE * sizes[key.document_id]
            and any(len(section_path(row, titles)) > len(key.path) for row in group)
        }
        if not dominant:
            return grouped
        split: dict[SectionKey, list[Mapping]] = {}
        for key, group in grouped.items():
            for row in group:
                deeper = top_section(row, titles, len(key.path) + 1) if key in dominant else key
                split.setdefault(deeper, []).append(row)
        grouped = split


def section_titles(keys: Sequence[SectionKey]) -> dict[SectionKey, str]:
    """Each section's title, or its headings joined ("Credit Agreement > MISCELLANEOUS") where another section of
    the same document has that title: subsections of different sections may share a name, and an exhaustive
    summary's parts are told apart by title."""
    named = Counter((key.document_id, key.title) for key in keys)
    return {
        key: join_heading(key.path) if named[(key.document_id, key.title)] > 1 and key.path else key.title
        for key in keys
    }


def body_words(row: Mapping) -> int:
    """Words of a chunk's text besides the headings of its path (which extraction may repeat in it)."""
    text = row["text"]
    for part in split_heading(row["heading"]):
        text = text.replace(part, " ")
    return len(words(text))


def is_section(group: Sequence[Mapping]) -> bool:
    """A part with text to cover: at least a handful of words besides its title."""
    return sum(body_words(row) for row in group) >= HANDFUL


def topics_from_headings(rows: Sequence[Mapping]) -> list[Topic]:
    """Consecutive top-level sections grouped into at most MAX_TOPICS topics; [] if too few sections."""
    return topics_from_sections(section_rows(rows), appended_from(rows))


def topics_from_sections(
    sections: Mapping[SectionKey, list[Mapping]], appended: Mapping[str, Appended] | None = None
) -> list[Topic]:
    """``topics_from_headings`` of sections already found (``section_rows``), ``appended`` read off all the rows."""
    grouped = {
        key: group for key, group in sections.items() if key.title != FRONT_MATTER and not is_reference_list(key.title)
    }
    if len(grouped) < MIN_TOPICS:
        return []
    found = [(key, len(group)) for key, group in grouped.items()]
    names = section_titles(list(grouped))
    openings = {key.document_id: key for key in reversed(grouped)}  # each document's first section
    several = len(openings) > 1
    appended = appended or {}
    tail = {
        key
        for key, group in grouped.items()
        if key.document_id in appended and group[0]["ordinal"] >= appended[key.document_id].first
    }
    topics = []
    for keys in _groups_by_document(found, MAX_TOPICS, tail):
        if keys[0] in tail:
            doc = keys[0].document_id
            title = _labels_title(appended[doc].labels)
            members = [r for k in keys for r in grouped[k]]
            topics.append(
                _heading_topic(keys, [f"{doc} appended: {title}" if several else f"Appended: {title}"], members)
            )
            continue
        shown = [names[k] for k in keys if not weak_title(names[k])]
        if not shown:  # nothing to name it by: the opening pages are front matter, later ones keep their names
            opening = openings[keys[0].document_id] == keys[0]
            front = f"{keys[0].document_id}: {FRONT_MATTER}" if several else FRONT_MATTER
            shown = [front] if opening else [names[k] for k in keys]
        topics.append(_heading_topic(keys, shown, [r for k in keys for r in grouped[k]]))
    return topics


def is_reference_list(title: str) -> bool:
    """A paper's list of works cited ("References", "7 Bibliography"): entries to look up, nothing to brief (a brief
    of one quoted "Zhuosheng Zhang, Aston Zhang, Mu Li, and Alex Smola."). An exhaustive summary still reads it."""
    return bool(_REFERENCE_LIST.fullmatch(_NUMBERING.sub("", title).strip().rstrip(":")))


def weak_title(name: str) -> bool:
    """A heading that names nothing for a reader: it begins in lower case (a title's second line "but a Good
    Reranker for Hard Samples!", the end of a pull quote), has no word of three letters but numerals ("1", "iii"),
    is a form's answer ("Yes"), holds a check box or a blank to fill in ("☒Annual report pursuant to ...",
    "For the transition period from ________ to"), goes on from the line above ("AND CONDITIONS") or is a field of a
    filing's cover page ("702 S.W. 8th Street", "Registrant's telephone number, including area code (703)-414-6338",
    "For the quarterly period ended July 2, 2023")."""
    text = _LETTERED.sub("", _NUMBERING.sub("", name)).strip()
    if not text or text.casefold() in _FORM_ANSWERS or "___" in text or any(c in text for c in "☐☑☒"):
        return True
    if _CONTINUED.match(text) or _COVER_FIELD.search(name):
        return True
    if text[0].islower() and not (len(text) > 1 and text[1].isupper()):  # "iPhone" is a name
        return True
    return not any(len(w) >= 3 and not _ROMAN.match(w) for w in words(text))


def _heading_topic(group: Sequence[SectionKey], titles: Sequence[str], members: Sequence[Mapping]) -> Topic:
    query = "; ".join(_NUMBERING.sub("", key.title) for key in group)
    docs = tuple(dict.fromkeys(k.document_id for k in group))
    return Topic(topic_title(titles, len(group)), query, docs, "headings", *_own(members))


def topic_title(sections: Sequence[str], count: int | None = None) -> str:
    """The sections' names, or the first and the last when they would not fit a line (a filing's notes), with how
    many sections the topic holds, ``count``, the weak ones that name nothing included."""
    joined = "; ".join(sections)
    if len(sections) <= 2 or len(joined) <= TITLE_CHARS:
        return joined
    return f"{sections[0]} … {sections[-1]} ({count or len(sections)} sections)"


def _labels_title(labels: Sequence[str]) -> str:
    """What was appended, by its labels: "Exhibit 21; Exhibit 23", or the first and the last of more
    ("Exhibit 10.13 … EXHIBIT 32.2"; a label set inside a heading, "Appendix D Appendix D", is not counted)."""
    return "; ".join(labels) if len(labels) <= 2 else f"{labels[0]} … {labels[-1]}"


def _own(members: Sequence[Mapping]) -> tuple[tuple[str, ...], bool]:
    """A topic's own chunk ids, and whether they hold too little text to stand alone."""
    return tuple(r["chunk_id"] for r in members), sum(body_words(r) for r in members) < SHORT_TOPIC_WORDS


def _groups_by_document(
    items: Sequence[tuple[SectionKey, int]], limit: int, appended: Collection[SectionKey] = ()
) -> list[list[SectionKey]]:
    """``_contiguous_groups`` within each document, at most ``limit`` in all: a topic of two documents' sections
    reads as one subject when it is two (the sample memo's "MEMORANDUM" with the agreement's "1 Definitions; 2
    Services" quoted the memo's car park among the agreement's definitions). Each document gets a share of the
    ``limit`` by its size (chunks), one at least; its ``appended`` sections one group of their own, by no size,
    while there is room for them; with more documents than ``limit``, runs may join documents."""
    documents = {key.document_id for key, _ in items}
    parts: dict[tuple[str, bool], list[tuple[SectionKey, int]]] = {}  # (document, appended): its sections
    room = len(documents) + len({key.document_id for key in appended}) <= limit
    for key, size in items:
        parts.setdefault((key.document_id, room and key in appended), []).append((key, size))
    if len(parts) > limit:
        return _contiguous_groups(items, limit)
    shares = dict.fromkeys(parts, 1)
    sizes = {part: sum(n for _, n in its) for part, its in parts.items()}
    for _ in range(limit - len(parts)):  # the highest average (D'Hondt), among bodies with sections to spare
        spare = [part for part, its in parts.items() if not part[1] and shares[part] < len(its)]
        if not spare:
            break
        most = max(spare, key=lambda part: sizes[part] / (shares[part] + 1))
        shares[most] += 1
    return [group for part, its in parts.items() for group in _contiguous_groups(its, shares[part])]


def _contiguous_groups(items: Sequence[tuple[SectionKey, int]], limit: int) -> list[list[SectionKey]]:
    """Split into at most ``limit`` runs of similar total size, keeping order."""
    if len(items) <= limit:
        return [[key] for key, _ in items]
    target = sum(n for _, n in items) / limit
    groups: list[list[SectionKey]] = [[]]
    filled = 0.0
    for index, (key, n) in enumerate(items):
        left_items, left_groups = len(items) - index, limit - len(groups)
        if groups[-1] and (filled + n / 2 > target or left_items <= left_groups) and left_groups > 0:
            groups.append([])
            filled = 0.0
        groups[-1].append(key)
        filled += n
    return groups


def topics_from_clusters(rows: Sequence[Mapping], vectors: np.ndarray) -> list[Topic]:
    """k-means over chunk embeddings; each cluster named by its three most characteristic terms."""
    from sklearn.cluster import KMeans

    k = min(len(rows), max(MIN_TOPICS, min(MAX_TOPICS, round(math.sqrt(len(rows) / 2)))))
    if k == 0:
        return []
    labels = KMeans(n_clusters=k, n_init=4, random_state=0).fit_predict(vectors) if k > 1 else np.zeros(len(rows))
    members = [[row for row, label in zip(rows, labels, strict=True) if label == c] for c in range(k)]
    terms = characteristic_terms([" ".join(r["text"] for r in group) for group in members])
    topics = []
    for group, names in zip(members, terms, strict=True):
        if group and names:
            docs = tuple(dict.fromkeys(r["document_id"] for r in group))
            topics.append(Topic(", ".join(names), " ".join(names), docs, "clusters", *_own(group)))
    return topics


def characteristic_terms(texts: Sequence[str], n: int = 3) -> list[list[str]]:
    """Per text, the terms frequent in it and rare in the others (class-based tf-idf)."""
    counts = [Counter(w for w in content_words(text) if len(w) > 2) for text in texts]
    spread = Counter(w for c in counts for w in c)
    return [
        [w for w, _ in sorted(c.items(), key=lambda kv: (-kv[1] * math.log(1 + len(texts) / spread[kv[0]]), kv[0]))[:n]]
        for c in counts
    ]
