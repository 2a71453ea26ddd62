"""Do heading topics stay in their sections, and does any sentence repeat? Measured on the sample corpus.

The sample corpus (data/sample_corpus.py) is written and ingested into a temporary store, then a
topic brief (no question, extractive synthesizer) of each document is run through the flow. Per
document and in total:

- ``own_section_share``: of the chunks cited by heading topics, the share that lie in one of the
  topic's own top-level sections (its ``chunk_ids``);
- ``sections_cited_share``: of the sections grouped into heading topics of at most ``PART_SENTENCES`` sections
  (as many as a part has sentences), the share that their topic's part cites;
- ``repeated_sentences``: sentences that appear again in the same summary (whitespace-normalised,
  case-insensitive), counting each repeat after the first;
- ``contents_quoted``: sentences citing a table of contents (``citesum.tasks.text.is_contents``);
- ``pointers_quoted`` of ``sentences``: sentences that only point elsewhere ("For more information, see
  Item 1A.", ``citesum.tasks.text.is_pointer``), of all the brief's sentences; ``titles_quoted``: sentences
  that are titles, a row finding aside (``citesum.tasks.text.is_title``: "Notes to Consolidated Financial
  Statements"); ``fragments_quoted``: sentences that are parts of a sentence, a row finding aside
  (``citesum.tasks.text.is_fragment``: "statements regarding", "(vi) the Notes to ..."); ``charts_quoted``: a chart's
  labels and values read as a sentence (``citesum.tasks.text.is_chart_text``), and ``short_quoted``: pieces under the
  extractive synthesizer's ``MIN_WORDS`` ("Article III."), row findings aside in both; ``forms_quoted``: a cover
  page's check boxes (``citesum.tasks.text.is_form_field``); ``standard_quoted``: a filing's standard language
  (``citesum.tasks.text.is_boilerplate``), which a part quotes only when it has nothing else; ``questions_quoted``: a
  question (a survey's wording, ``citesum.tasks.text.is_question``); ``run_together``: a sentence whose span in its
  chunk crosses a paragraph break that ``split_sentences(paragraphs=True)`` cuts (a chart's credit line run into the
  next paragraph); ``back_references``: a sentence that opens on a pronoun, a demonstrative or a connective
  (``citesum.tasks.text.refers_back``: "During that period ...").

Prints JSON; ``--texts`` adds each document's brief sentences, to compare two runs. With ``--db STORE
[DOCUMENT ...]`` the same for documents of an existing store (a development set's filings) instead of the sample
corpus. With ``--questions FILE`` too (a development set's questions.jsonl), the documents its answerable questions
name are briefed, and ``gold_cited_share`` is the share of those questions whose document's brief cites one of their
evidence pages: a brief has no reference to score against, but a set's questions ask what a reader of the document
wants from it. Beside it, ``lead_gold_cited_share``: the same
for lead of sections, each topic's sections' first statements (6 to 80 words) in document order, as many as its
part has sentences.

    python tests/benchmarks/topics_benchmark.py
    python tests/benchmarks/topics_benchmark.py --db /tmp/fb 3M_2018_10K.pdf BOEING_2022_10K.pdf
    python tests/benchmarks/topics_benchmark.py --db /tmp/fb --questions ../shared/eval/financebench/questions.jsonl
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW_FINDING = re.compile(r"[^:]+: \S+ \S+.*; ")  # "Total debt: 2018 $14,622; 2017 $13,949", no title


def load_sample_corpus():
    spec = importlib.util.spec_from_file_location("sample_corpus", ROOT / "data" / "sample_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["sample_corpus"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def repeated_sentences(texts) -> int:
    """How many sentences repeat one earlier in the same summary (whitespace and case aside)."""
    from citesum.tasks.text import normalize_space

    counts = Counter(normalize_space(t).lower() for t in texts)
    return sum(n - 1 for n in counts.values())


def runs_together(sentence: str, chunk_text: str) -> bool:
    """The quoted ``sentence`` spans text of two paragraphs of its chunk: a cut of ``split_sentences(paragraphs=True)``
    falls inside it (found with any whitespace between its words, as the quote normalises it)."""
    from citesum.tasks.text import split_sentences

    found = re.search(r"\s+".join(map(re.escape, sentence.split())), chunk_text)
    if found is None:  # a row finding, or a clause whose ";" was dropped
        return False
    return any(found.start() < start < found.end() for start, _ in split_sentences(chunk_text, paragraphs=True))


def measure(summary, rows, topics) -> dict:
    """Of one summary: the own-section share of the heading ``topics``' citations, the sections their parts cite,
    repeated sentences, and the sentences quoting a table of contents, a pointer, a title, part of a sentence, a
    chart's numbers or a piece too short to say anything."""
    from citesum.tasks.summarize.synthesizers.base import PART_SENTENCES
    from citesum.tasks.summarize.synthesizers.extractive import MIN_WORDS, word_count
    from citesum.tasks.summarize.topics import section_rows
    from citesum.tasks.text import (
        is_boilerplate,
        is_chart_text,
        is_contents,
        is_form_field,
        is_fragment,
        is_pointer,
        is_question,
        is_title,
        refers_back,
    )

    own_chunks = {topic.title: set(topic.chunk_ids) for topic in topics}
    section_of = {r["chunk_id"]: key for key, group in section_rows(rows).items() for r in group}
    contents = {r["chunk_id"] for r in rows if is_contents(r["text"])}
    chunk_text = {r["chunk_id"]: r["text"] for r in rows}
    own = cited = from_contents = sections = sections_cited = run_together = 0
    for part in summary.parts:
        wanted = own_chunks.get(part.section.title, set())
        by_label = {e.label: e.chunk_id for e in part.section.evidence}
        chunks = {by_label[label] for s in part.section.sentences for label in s.citations}
        cited += len(chunks)
        own += len(chunks & wanted)
        grouped = {section_of[c] for c in wanted if c in section_of}
        if len(grouped) <= PART_SENTENCES:  # a topic of more sections cannot cite each
            sections += len(grouped)
            sections_cited += len(grouped & {section_of.get(c) for c in chunks})
        from_contents += sum(any(by_label[c] in contents for c in s.citations) for s in part.section.sentences)
        run_together += sum(
            runs_together(s.text, chunk_text.get(by_label[s.citations[0]], ""))
            for s in part.section.sentences
            if s.citations
        )
    texts = [s.text for part in summary.parts for s in part.section.sentences]
    return {
        "cited_chunks": cited,
        "own_section": own,
        "sections": sections,
        "sections_cited": sections_cited,
        "repeated_sentences": repeated_sentences(texts),
        "contents_quoted": from_contents,
        "pointers_quoted": sum(is_pointer(t) for t in texts),
        "titles_quoted": sum(is_title(t) and not ROW_FINDING.match(t) for t in texts),
        "fragments_quoted": sum(is_fragment(t) and not ROW_FINDING.match(t) for t in texts),
        "charts_quoted": sum(is_chart_text(t) and not ROW_FINDING.match(t) for t in texts),
        "short_quoted": sum(word_count(t) < MIN_WORDS and ": " not in t for t in texts),  # a row finding has "label: "
        "forms_quoted": sum(is_form_field(t) for t in texts),
        "standard_quoted": sum(is_boilerplate(t) for t in texts),
        "questions_quoted": sum(is_question(t) for t in texts),
        "run_together": run_together,
        "back_references": sum(refers_back(t) for t in texts),
        "sentences": len(texts),
        "texts": texts,
    }


def brief_pages(summary) -> set[tuple[str, int]]:
    """The (document, page) pairs a summary cites."""
    return {
        (c.document_id, page) for c in summary.citations()[1].values() for page in range(c.page_start, c.page_end + 1)
    }


def lead_pages(summary, rows, topics) -> set[tuple[str, int]]:
    """The pages lead of sections cites: per topic, its sections' first statements in document order, as many as the
    topic's part has sentences."""
    from citesum.tasks.summarize.synthesizers.extractive import MAX_WORDS, MIN_WORDS, word_count
    from citesum.tasks.summarize.topics import section_rows
    from citesum.tasks.text import sentences

    section_of = {r["chunk_id"]: key for key, group in section_rows(rows).items() for r in group}
    by_id = {r["chunk_id"]: r for r in rows}
    length = {part.section.title: len(part.section.sentences) for part in summary.parts}
    pages = set()
    for topic in topics:
        firsts, seen = [], set()
        for chunk_id in topic.chunk_ids:
            row = by_id[chunk_id]
            if section_of.get(chunk_id) in seen:
                continue
            if any(MIN_WORDS <= word_count(s) <= MAX_WORDS for s in sentences(row["text"])):
                seen.add(section_of.get(chunk_id))
                firsts.append(row)
        for row in firsts[: length.get(topic.title, 0)]:
            pages.update((row["document_id"], p) for p in range(row["page_start"], row["page_end"] + 1))
    return pages


def clusters(store, document: str):
    """The cluster topics a brief of ``document`` has when it has no heading topics (as ``tasks.find_topics``)."""
    import numpy as np

    from citesum.tasks.summarize.tasks import chunk_rows
    from citesum.tasks.summarize.topics import topics_from_clusters

    rows = chunk_rows(store, (document,), vectors=True)
    return topics_from_clusters(rows, np.asarray([r["vector"] for r in rows], np.float32))


def main() -> None:
    import argparse

    from prefect.testing.utilities import prefect_test_harness

    from citesum.flows.ingest import run_ingest
    from citesum.flows.summarize import run_summarize
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.summarize.tasks import chunk_rows
    from citesum.tasks.summarize.topics import topics_from_headings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an existing store to brief instead of the sample corpus")
    parser.add_argument("documents", nargs="*", help="with --db: the documents to brief (default: all)")
    parser.add_argument(
        "--questions", help="with --db: a questions.jsonl whose answerable questions' documents to brief"
    )
    parser.add_argument("--texts", action="store_true", help="print each brief's sentences too")
    args = parser.parse_args()
    from citesum.tasks.summarize.evaluate import load_questions

    questions = [q for q in load_questions(args.questions) if q.answerable] if args.questions else []
    root = Path(tempfile.mkdtemp(prefix="citesum-topics-"))
    if args.db is None:
        load_sample_corpus().write_sample_corpus(root / "corpus")
    settings = Settings(
        corpus=root / "corpus",
        db=args.db or str(root / "db"),
        runs_dir=root / "runs",
        ollama_host="http://127.0.0.1:9",
    )
    results: dict[str, dict] = {}
    with prefect_test_harness(server_startup_timeout=120):
        if args.db is None:
            assert run_ingest(None, settings).is_completed()
        store = LanceStore.open(settings.store.db)
        named = sorted({d for q in questions for d in q.documents})
        briefed: set[tuple[str, int]] = set()  # every (document, page) a brief cites
        lead: set[tuple[str, int]] = set()
        for document in args.documents or named or sorted(store.documents()):
            state = run_summarize(None, [document], "topics", "extractive", settings)
            summary = state.result()
            rows = chunk_rows(store, (document,))
            topics = topics_from_headings(rows)
            origin = "headings" if topics else "clusters"
            results[document] = {"topics": len(summary.parts), "origin": origin, **measure(summary, rows, topics)}
            if not args.texts:
                del results[document]["texts"]
            briefed |= brief_pages(summary)
            if questions:
                lead |= lead_pages(summary, rows, topics or clusters(store, document))
    heading = [r for r in results.values() if r["origin"] == "headings"]
    own, cited = sum(r["own_section"] for r in heading), sum(r["cited_chunks"] for r in heading)
    sections = sum(r["sections"] for r in heading)
    total = {
        "own_section_share": round(own / cited, 3) if cited else None,
        "sections_cited_share": round(sum(r["sections_cited"] for r in heading) / sections, 3) if sections else None,
        "repeated_sentences": sum(r["repeated_sentences"] for r in results.values()),
        "contents_quoted": sum(r["contents_quoted"] for r in results.values()),
        "pointers_quoted": sum(r["pointers_quoted"] for r in results.values()),
        "titles_quoted": sum(r["titles_quoted"] for r in results.values()),
        "fragments_quoted": sum(r["fragments_quoted"] for r in results.values()),
        "charts_quoted": sum(r["charts_quoted"] for r in results.values()),
        "short_quoted": sum(r["short_quoted"] for r in results.values()),
        "forms_quoted": sum(r["forms_quoted"] for r in results.values()),
        "standard_quoted": sum(r["standard_quoted"] for r in results.values()),
        "questions_quoted": sum(r["questions_quoted"] for r in results.values()),
        "run_together": sum(r["run_together"] for r in results.values()),
        "back_references": sum(r["back_references"] for r in results.values()),
        "sentences": sum(r["sentences"] for r in results.values()),
    }
    if questions:
        total["questions"] = len(questions)
        total["gold_cited_share"] = round(sum(bool(q.pages & briefed) for q in questions) / len(questions), 3)
        total["lead_gold_cited_share"] = round(sum(bool(q.pages & lead) for q in questions) / len(questions), 3)
    print(json.dumps({"documents": results, "total": total}, indent=2))


if __name__ == "__main__":
    main()
