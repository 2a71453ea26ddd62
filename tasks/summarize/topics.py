"""Topics for a summary without a question: from headings, else from clusters.

A document's top-level sections come from its heading paths; a heading shared by
every chunk of the document (its title) is skipped. With at least ``MIN_TOPICS``
sections, consecutive sections are grouped into at most ``MAX_TOPICS`` topics so
nothing is left out; otherwise chunk embeddings are clustered and each cluster is
named by its characteristic terms.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citesum.tasks.text import content_words, split_heading

MIN_TOPICS = 5
MAX_TOPICS = 8
FRONT_MATTER = "(front matter)"  # text before the first heading, or under the title alone
_NUMBERING = re.compile(r"^\s*(?:section\s+|article\s+)?[\dIVXivx]+(?:\.\d+)*[.)]?\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Topic:
    title: str  # shown as the section title of the summary
    query: str  # what retrieval searches for
    document_ids: tuple[str, ...]  # retrieval is restricted to these
    origin: str  # "headings" or "clusters"


@dataclass(frozen=True)
class SectionKey:
    document_id: str
    title: str


def document_titles(rows: Sequence[Mapping]) -> dict[str, str]:
    """Per document, a first heading shared by all its chunks (the document title), if any."""
    firsts: dict[str, set[str]] = {}
    for row in rows:
        firsts.setdefault(row["document_id"], set()).add(split_heading(row["heading"])[0] if row["heading"] else "")
    return {doc: next(iter(heads)) for doc, heads in firsts.items() if len(heads) == 1 and "" not in heads}


def top_section(row: Mapping, titles: Mapping[str, str]) -> SectionKey:
    """The top-level section a chunk belongs to, below the document title."""
    parts = split_heading(row["heading"])
    if parts and titles.get(row["document_id"]) == parts[0]:
        parts = parts[1:]
    return SectionKey(row["document_id"], parts[0] if parts else FRONT_MATTER)


def sections(rows: Sequence[Mapping]) -> list[tuple[SectionKey, int]]:
    """Top-level sections in document order, with their chunk counts."""
    titles = document_titles(rows)
    counts: Counter[SectionKey] = Counter()
    for row in sorted(rows, key=lambda r: (r["document_id"], r["ordinal"])):
        counts[top_section(row, titles)] += 1
    return list(counts.items())


def topics_from_headings(rows: Sequence[Mapping]) -> list[Topic]:
    """Consecutive top-level sections grouped into at most MAX_TOPICS topics; [] if too few sections."""
    found = [(key, n) for key, n in sections(rows) if key.title != FRONT_MATTER]
    if len(found) < MIN_TOPICS:
        return []
    return [_heading_topic(group) for group in _contiguous_groups(found, MAX_TOPICS)]


def _heading_topic(group: Sequence[SectionKey]) -> Topic:
    titles = [key.title for key in group]
    query = "; ".join(_NUMBERING.sub("", t) for t in titles)
    return Topic("; ".join(titles), query, tuple(dict.fromkeys(k.document_id for k in group)), "headings")


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
    for group, words in zip(members, terms, strict=True):
        if group and words:
            docs = tuple(dict.fromkeys(r["document_id"] for r in group))
            topics.append(Topic(", ".join(words), " ".join(words), docs, "clusters"))
    return topics


def characteristic_terms(texts: Sequence[str], n: int = 3) -> list[list[str]]:
    """Per text, the terms frequent in it and rare in the others (class-based tf-idf)."""
    counts = [Counter(w for w in content_words(text) if len(w) > 2) for text in texts]
    spread = Counter(w for c in counts for w in c)
    return [
        [w for w, _ in sorted(c.items(), key=lambda kv: (-kv[1] * math.log(1 + len(texts) / spread[kv[0]]), kv[0]))[:n]]
        for c in counts
    ]
