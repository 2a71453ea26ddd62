"""The run record: everything a summary was made from, so any sentence can be traced.

Source text, candidates and evidence stay distinct: candidates carry their
retrieval scores and ranks; evidence is the reranked subset with its labels;
attempts keep the prompt, the raw output and each sentence's validation; ``quarantined`` lists the
passages left out as addressing an AI system (a candidate's ``injection`` holds the pages ingestion flagged).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

from citesum.tasks.records import to_json
from citesum.tasks.settings import Settings
from citesum.tasks.summarize.compose import Attempt
from citesum.tasks.summarize.evidence import Candidate, Evidence
from citesum.tasks.summarize.summary import Summary, SummaryPart


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


def run_record(summary: Summary, settings: Settings, embed_backend: str = "") -> dict:
    """The run's record; ``embed_backend`` says what embedded its queries and why ("openvino bf16 (auto: ...)")."""
    return {
        **summary.to_json(),
        "mode_reason": summary.mode_reason,
        "synthesizer_reason": summary.synthesizer_reason,
        "embed_backend": embed_backend,
        "settings": to_json(settings.flat_values()),  # by flat name (CITESUM_<NAME>), as before the groups
        "parts": [_part(part) for part in summary.parts],
        "recorded_at": datetime.now(UTC).isoformat(),
    }


def write_run(record: dict, runs_dir: Path) -> Path:
    runs_dir.mkdir(parents=True, exist_ok=True)
    path = runs_dir / f"{record['run_id']}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    temporary.replace(path)  # a reader never sees half a record
    return path


# A candidate is recorded by its chunk's identity and place, and its scores; its text is in the evidence, when
# selected.
CHUNK_LEAVES_OUT = {"version", "source", "text", "ordinal"}


def _part(part: SummaryPart) -> dict:
    section = part.section
    return {
        "title": section.title,
        "query": part.query,
        "candidates": [_candidate(c) for c in part.candidates],
        "evidence": [_evidence(e) for e in section.evidence],
        "attempts": [_attempt(a) for a in section.attempts],
        "removed": to_json(section.removed),
        "warning": section.warning,
        "not_stated_because": section.reason or None,
        "fallback": _attempt(section.fallback) if section.fallback else None,
        "quarantined": to_json(section.quarantined),  # passages that address an AI system, left out
    }


def _candidate(candidate: Candidate) -> dict:
    chunk = candidate.chunk
    return {
        "chunk_id": chunk.chunk_id,
        **to_json(chunk, exclude=CHUNK_LEAVES_OUT),
        **to_json(candidate, exclude={"chunk", "vector"}),
    }


def _evidence(e: Evidence) -> dict:
    return {
        "label": e.label,
        "chunk_id": e.chunk_id,
        "score": e.score,
        "signals": e.signals,
        "text": e.text,  # as synthesis saw it: quarantined sentences cut (see "quarantined")
    }


def _attempt(a: Attempt) -> dict:
    return {
        "prompt": a.draft.prompt,
        "raw_output": a.draft.raw,
        "validation": [
            to_json(c.sentence) | {"ok": c.ok, "problems": to_json(c.problems)} for c in a.validation.checks
        ],
    }
