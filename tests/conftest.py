"""Shared fixtures: the real embedding model, loaded once per test session."""

from __future__ import annotations

import pytest

from tasks.embed import load_embedder


@pytest.fixture(scope="session")
def embedder():
    return load_embedder()
