"""The plain parts of the ingestion tasks, without the Prefect engine."""

from __future__ import annotations

import json

import numpy as np
import pytest
from prefect.states import Failed

from citesum.tasks.errors import ConfigurationError, DocumentError, TransientError
from citesum.tasks.ingest.tasks import embed_with_reuse, load_passwords
from citesum.tasks.policy import retry_transient
from citesum.tasks.records import Problem, lost_pages


def test_only_transient_errors_are_retried():
    assert retry_transient(None, None, Failed(data=TransientError("commit conflict", source="a.pdf")))
    assert not retry_transient(None, None, Failed(data=DocumentError("corrupt", "broken", source="a.pdf")))
    assert not retry_transient(None, None, Failed(data=ValueError("a bug")))


def test_embed_with_reuse_embeds_only_what_is_not_stored(embedder):
    stored = embedder.embed(["kept text"])[0]
    vectors, embedded = embed_with_reuse([("kept text", "k1"), ("new text", "k2")], {"k1": stored}, embedder)
    assert embedded == 1
    assert np.allclose(vectors[0], stored)
    assert np.allclose(vectors[1], embedder.embed(["new text"])[0], atol=1e-5)


def test_passwords_file_must_be_a_json_object(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"secret.pdf": "pw"}))
    assert load_passwords(good) == {"secret.pdf": "pw"}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigurationError, match="bad.json"):
        load_passwords(bad)


def test_ocr_and_blank_pages_are_not_extraction_loss():
    problems = [
        Problem("ocr", "no text layer; text from OCR", 1),
        Problem("blank_page", "blank page", 2),
        Problem("no_text_layer", "no text layer and OCR is turned off", 3),
        Problem("page_error", "cycle in page tree", 4),
        Problem("repaired", "MuPDF repaired the file"),
    ]
    assert lost_pages(problems) == {3, 4}
