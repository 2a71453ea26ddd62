"""`citesum eval --summaries` through the engine, against the session's test server (tests/flows/conftest.py).

It lives here, not beside the quality scorers, so it runs on the session's one server: a second test harness
opened in tests/ while the session's one was still up left this test waiting 900 s for the writer slot in CI.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citesum.deployments.cli import app
from tests.fake_ollama import Reply


def agreement_corpus(tmp_path, sample) -> tuple[Path, dict]:
    """A corpus of the sample corpus's agreement, and a question its notice clause answers."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    placed = sample.services_agreement(corpus / "services_agreement.pdf")
    notice = next(p for p in placed if "12.2 Notice" in p.heading)
    question = {
        "id": "q1",
        "question": "How many days of notice does termination for convenience need?",
        "answer": "30",
        "evidence": [{"document": "services_agreement.pdf", "pages": [notice.page]}],
        "source": "sample",
        "kind": "text",
    }
    return corpus, question


def test_cli_eval_summaries_json_shape(tmp_path, sample):
    corpus, notice_question = agreement_corpus(tmp_path, sample)
    rows = [
        notice_question,
        {"id": "q2", "question": "What is the capital of Mongolia?", "answer": None, "evidence": []}
        | {"source": "sample", "kind": "none"},
        # a document but no page: neither scored against gold pages nor counted as unanswerable
        {"id": "q3", "question": "When was it signed?", "answer": "2024"}
        | {"evidence": [{"document": "services_agreement.pdf", "pages": []}], "source": "sample", "kind": "date"},
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(r) for r in rows))

    result = CliRunner().invoke(
        app, ["eval", str(questions), "--pdfs", str(corpus), "--db", str(tmp_path / "db"), "--summaries", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {
        "questions",
        "answerable",
        "evidence_hit@8",
        "methods",
        "unanswerable",
        "by_source",
        "settings",
    }
    assert report["questions"] == 3 and report["answerable"] == 1
    assert report["unanswerable"]["questions"] == 1 and 0.0 <= report["unanswerable"]["not_stated"] <= 1.0
    assert set(report["methods"]) == {"citesum", "lexrank", "lead"}
    for figures_of in report["methods"].values():
        assert set(figures_of) == {
            "cited_page_precision",
            "citations",
            "gold_page_recall",
            "answer_found",
            "short_answers",
            "repeated_sentences",
            "sentences_per_summary",
            "injected_surfaced",
            "latency_s",
        }
        assert figures_of["short_answers"] == 1 and figures_of["latency_s"]["median"] > 0
        assert all(0.0 <= figures_of[k] <= 1.0 for k in ("cited_page_precision", "gold_page_recall", "answer_found"))
    assert report["methods"]["citesum"]["injected_surfaced"] == 0
    counts = {m: f["sentences_per_summary"] for m, f in report["methods"].items()}
    assert counts["citesum"] >= 1 and counts["lexrank"] == counts["lead"] == counts["citesum"]
    assert list(report["by_source"]) == ["sample"] and report["by_source"]["sample"]["questions"] == 3
    assert report["settings"]["synthesizer"] == "extractive"


def test_cli_eval_summaries_measures_the_chosen_synthesizer(tmp_path, sample, fake_ollama):
    """`--synth ollama` measures Ollama's summaries (validated, with the extractive fallback a summary run has)
    against the same baselines, so a reading model's figures can be had where one runs; retrieval alone takes no
    synthesizer."""
    corpus, notice_question = agreement_corpus(tmp_path, sample)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(notice_question))
    env = {"CITESUM_OLLAMA_HOST": fake_ollama.url, "CITESUM_OLLAMA_MODEL": "llama3.2"}
    # Every answer empty (the model probe still gets its model list): the summary's sentences can only come from
    # the extractive fallback, which a summary run has and the measure must have too.
    fake_ollama.script(*[Reply(content="")] * 8)
    base = ["eval", str(questions), "--pdfs", str(corpus), "--db", str(tmp_path / "db")]

    result = CliRunner().invoke(app, [*base, "--summaries", "--synth", "ollama", "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["settings"]["synthesizer"] == "ollama:llama3.2"
    assert any(r.path == "/api/chat" for r in fake_ollama.requests)
    assert report["methods"]["citesum"]["sentences_per_summary"] >= 1  # written by the fallback

    refused = CliRunner().invoke(app, [*base, "--synth", "ollama"], env=env)
    assert refused.exit_code == 2
    assert "--synth chooses the synthesizer of --summaries" in refused.output
