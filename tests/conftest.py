"""Shared fixtures (the real embedding model, loaded once per session) and the `engine` marker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from citesum.tasks.embed import load_embedder

# Tests under these folders run through the Prefect engine (tests/flows: the session's temporary server) or
# start servers as processes (tests/e2e). They are marked here, by folder, so no test there goes unmarked.
ENGINE_FOLDERS = ("flows", "e2e")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        relative = Path(item.path).relative_to(here) if Path(item.path).is_relative_to(here) else None
        if relative is not None and relative.parts[0] in ENGINE_FOLDERS:
            item.add_marker(pytest.mark.engine)


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
