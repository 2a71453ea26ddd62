"""Shared fixtures: the real embedding model, loaded once per test session."""

from __future__ import annotations

import sys

import pytest

from citesum.tasks.embed import load_embedder


@pytest.fixture(scope="session")
def embedder():
    return load_embedder()


@pytest.fixture
def fake_ollama():
    """A scripted local server speaking Ollama's API."""
    from tests.fake_ollama import serve_fake_ollama

    with serve_fake_ollama() as fake:
        yield fake


@pytest.fixture(scope="session")
def sample():
    """The sample-corpus generator (data/sample_corpus.py), imported from its file."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "sample_corpus.py"
    spec = importlib.util.spec_from_file_location("sample_corpus", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sample_corpus"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
