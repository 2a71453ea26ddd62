"""Settings: grouped fields, set by today's flat CITESUM_* names or nested ones; the chunking group is the fingerprint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from citesum.deployments.cli import make_settings
from citesum.deployments.serve import run_environment
from citesum.tasks.settings import ChunkingSettings, Settings, flat_names


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """No CITESUM_* variable of the shell running the tests leaks in."""
    for name in os.environ:
        if name.upper().startswith("CITESUM_"):
            monkeypatch.delenv(name)


def groups(settings: Settings) -> dict[str, BaseModel]:
    return {name: getattr(settings, name) for name in type(settings).model_fields}


def changed(value):
    """Another valid value of the same kind, for any field."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 if value else 1.0
    if isinstance(value, Path):
        return value / "elsewhere"
    if isinstance(value, str):
        # three fields take choices
        return {"threads": "dask", "inside": "always", "auto": "torch"}.get(value, f"{value}-other")
    assert value is None
    return "set"


def every_field_changed() -> dict[str, object]:
    """Each field by flat name with a value other than its default."""
    return {name: changed(value) for name, value in Settings().flat_values().items()}


def test_flat_and_nested_variables_set_a_grouped_field(monkeypatch):
    monkeypatch.setenv("CITESUM_WORKERS", "3")
    monkeypatch.setenv("CITESUM_CHUNKING__CHUNK_TOKENS", "64")
    monkeypatch.setenv("citesum_store__db", "s3://bucket/store")  # names are case-insensitive
    settings = Settings()
    assert (settings.ingest.workers, settings.chunking.chunk_tokens, settings.store.db) == (3, 64, "s3://bucket/store")


def test_a_flat_variable_wins_over_the_nested_one(monkeypatch):
    monkeypatch.setenv("CITESUM_INGEST__RUNNER", "dask")
    monkeypatch.setenv("CITESUM_RUNNER", "dask://scheduler:8786")
    assert Settings().ingest.runner == "dask://scheduler:8786"


def test_every_field_is_set_by_its_flat_variable(monkeypatch):
    defaults, wanted = Settings().flat_values(), every_field_changed()
    for name, value in wanted.items():
        monkeypatch.setenv(f"CITESUM_{name.upper()}", str(value))
    from_env = Settings().flat_values()
    assert from_env == Settings(**wanted).flat_values()
    assert all(from_env[name] != defaults[name] for name in defaults)


def test_keyword_arguments_take_flat_or_grouped_names_and_win_over_variables(monkeypatch):
    monkeypatch.setenv("CITESUM_DB", "from-env")
    monkeypatch.setenv("CITESUM_INGEST__WORKERS", "5")
    assert Settings(db="flat").store.db == "flat"
    assert Settings(store={"db": "nested"}).store.db == "nested"
    assert Settings(ingest={"workers": 4}).ingest.workers == 4
    assert Settings(workers=3, ingest={"runner": "dask"}).ingest.model_dump(include={"workers", "runner"}) == {
        "workers": 3,
        "runner": "dask",
    }


def test_unknown_names_are_refused(monkeypatch):
    with pytest.raises(ValidationError, match="chunk_token"):
        Settings(chunk_token=100)
    with pytest.raises(ValidationError, match="worker"):
        Settings(ingest={"worker": 3})
    monkeypatch.setenv("CITESUM_INGEST__WORKER", "3")
    with pytest.raises(ValidationError, match="worker"):
        Settings()


def test_invalid_values_are_refused_in_either_form(monkeypatch):
    with pytest.raises(ValidationError, match="chunk_tokens"):
        Settings(chunk_tokens=1)
    monkeypatch.setenv("CITESUM_WORKERS", "0")
    with pytest.raises(ValidationError, match="workers"):
        Settings()


def test_every_group_and_field_is_described():
    for name, info in Settings.model_fields.items():
        assert info.description, name
        for field, field_info in type(getattr(Settings(), name)).model_fields.items():
            assert field_info.description, f"{name}.{field}"


def test_flat_names_cover_every_field_once():
    names = flat_names()
    assert sum(len(type(group).model_fields) for group in groups(Settings()).values()) == len(names)
    assert all(name in type(getattr(Settings(), group)).model_fields for name, group in names.items())


@pytest.mark.parametrize("field", sorted(ChunkingSettings.model_fields))
def test_changing_a_chunk_shaping_field_changes_the_fingerprint(field):
    assert Settings(**{field: every_field_changed()[field]}).fingerprint() != Settings().fingerprint()


@pytest.mark.parametrize("field", sorted(set(flat_names()) - set(ChunkingSettings.model_fields)))
def test_changing_any_other_field_keeps_the_fingerprint(field):
    assert Settings(**{field: every_field_changed()[field]}).fingerprint() == Settings().fingerprint()


def test_the_default_fingerprint_is_the_one_stores_already_hold():
    # The seven values since tables are extracted as rows (issue 12, ``tables``) and CHUNK_FORMAT 24 (an overlap
    # begins where a sentence does): a store ingested before then, fingerprint b2ecbc9f2d23 (23), f6feaabf124a (22),
    # fd7c5e0a5ec1 (21), f02b371ef547 (20),
    # f9f7afd3f11b (19), 32576c44d804 (18), aa411852103f (17), 98d79f3e3155 (16), 6ad28ad3c4c8 (15),
    # 2b03e3b9c364 (14), df1d2f4d02db (13), a6b19e76000d (12), 1714cdd98b1e (11), ed2729dd6f70 (10), ada57c7761ff (9),
    # 4b9ff7747749 (8), d4bbcc771604 (7), 1c636c0c4df0 (6), 91b1b2b81528 (5), 917348172cc9 (4), c17613455e6d (3),
    # 0e3c176b5e51 (2),
    # 5a0986a081e3 (the seven values alone) or a5a32cec2bca (the flat settings' six values, commit 17a2694), is
    # re-chunked once.
    assert Settings().fingerprint() == "7de0e867f5e6"


def test_the_served_environment_rebuilds_every_setting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    served = Settings(**every_field_changed())
    env = run_environment(served)
    assert env["CITESUM_WORKERS"] == str(served.ingest.workers)
    monkeypatch.chdir("/")
    monkeypatch.setenv("CITESUM_INGEST__WORKERS", "7")  # a nested variable the serving shell had set
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    rebuilt = Settings()
    assert rebuilt.ingest.corpus == tmp_path / served.ingest.corpus
    assert rebuilt.fingerprint() == served.fingerprint()
    relative = {"corpus", "inbox", "runs_dir", "passwords_file", "db"}  # made absolute
    assert {k: v for k, v in rebuilt.flat_values().items() if k not in relative} == {
        k: v for k, v in served.flat_values().items() if k not in relative
    }


def test_command_line_options_override_by_flat_name(monkeypatch):
    monkeypatch.setenv("CITESUM_RUNNER", "dask")
    settings = make_settings(db="cli-db", passwords_file=Path("p.json"), runner=None, watch_poll_seconds=0.5)
    assert settings.store.db == "cli-db" and settings.ingest.passwords_file == Path("p.json")
    assert settings.ingest.runner == "dask"  # an option not given keeps the variable
    assert settings.service.watch_poll_seconds == 0.5
