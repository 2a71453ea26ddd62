"""Flow tests run through the Prefect engine against one temporary server per session."""

from __future__ import annotations

import os

import pytest
from prefect.testing.utilities import prefect_test_harness


@pytest.fixture(scope="session", autouse=True)
def prefect_server(tmp_path_factory):
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def corpus(tmp_path, sample):
    folder = tmp_path / "corpus"
    placed = sample.write_sample_corpus(folder)
    return folder, placed
