"""Records become JSON through one function: what it converts, and what it leaves out when asked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from citesum.tasks.records import Problem, to_json


@dataclass(frozen=True)
class Held:
    """What records hold besides plain values."""

    path: Path
    at: datetime
    score: np.float32
    vector: np.ndarray
    problems: tuple[Problem, ...]
    text: str = "left out"


def test_dataclasses_paths_datetimes_and_numpy_become_json_values():
    held = Held(
        Path("/corpus/a.pdf"),
        datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        np.float32(0.25),
        np.array([1.0, 0.5], np.float32),
        (Problem("ocr", "text from OCR", 2),),
    )
    value = to_json(held, exclude={"text"})
    assert value == {
        "path": "/corpus/a.pdf",
        "at": "2024-05-01T12:30:00Z",
        "score": 0.25,
        "vector": [1.0, 0.5],
        "problems": [{"kind": "ocr", "message": "text from OCR", "page": 2}],
    }
    assert json.loads(json.dumps(value)) == value  # plain JSON values, nothing left to convert


def test_numbers_that_are_not_finite_stay_numbers_as_json_dumps_writes_them():
    assert json.dumps(to_json({"coverage": float("nan"), "ratio": np.float64("inf")})) == (
        '{"coverage": NaN, "ratio": Infinity}'
    )


def test_something_with_no_json_form_is_an_error_naming_its_type():
    with pytest.raises(TypeError, match="object is not JSON serialisable"):
        to_json({"unknown": object()})
