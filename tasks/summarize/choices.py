"""The summarize command's choices, checked without the engine: a mistyped option is refused in well under a second.

Mode and synthesizer are chosen here (the synthesizer's reachability is probed later, in tasks.py), each with the
reason the output reports.
"""

from __future__ import annotations

import re

from citesum.tasks.errors import ConfigurationError

MODES = ("auto", "query", "topics", "exhaustive")
SYNTHESIZERS = ("auto", "ollama", "extractive")

# Requests that need every section considered, not the most relevant passages.
_EVERY = re.compile(
    r"\b(every|each|all|entire|whole|complete|comprehensive|exhaustive|full list|list of all)\b", re.IGNORECASE
)


def choose_mode(question: str | None, mode: str) -> tuple[str, str]:
    """The mode that runs, and why (reported with the summary)."""
    if mode not in MODES:
        raise ConfigurationError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode == "query" and not (question and question.strip()):
        raise ConfigurationError("query mode needs a question")
    if mode != "auto":
        return mode, "chosen"
    if not question or not question.strip():
        return "topics", "no question: a brief of the documents' topics"
    if match := _EVERY.search(question):
        return "exhaustive", f"the request asks for {match.group(0).lower()!r}: every chunk is read"
    return "query", "a question: the passages most relevant to it"


def check_synthesizer(choice: str) -> None:
    if choice not in SYNTHESIZERS:
        raise ConfigurationError(f"unknown synthesizer {choice!r}; choose one of {', '.join(SYNTHESIZERS)}")
