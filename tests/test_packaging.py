"""The code installs as one `citesum` package and its imports run one way.

deployments -> flows -> tasks; inside tasks, the stage packages (ingest, store, summarize) -> the shared
modules at the top of tasks/; summarize and ingest never import each other; store imports neither.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("flows", "tasks", "deployments")
STAGES = ("ingest", "store", "summarize")


def modules() -> dict[str, Path]:
    """Every module of the package by its installed name."""
    found = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(("citesum", *parts))] = path
    return found


def imported(path: Path) -> set[str]:
    """Modules a file imports anywhere (top level, inside functions, under TYPE_CHECKING)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def layer(module: str) -> tuple[str, ...]:
    """('deployments',), ('flows',), ('tasks', 'shared') or ('tasks', stage)."""
    parts = module.split(".")[1:]
    if parts[0] != "tasks":
        return (parts[0],)
    if len(parts) > 1 and parts[1] in STAGES:
        return ("tasks", parts[1])
    return ("tasks", "shared")


def allowed(importer: tuple[str, ...], target: tuple[str, ...]) -> bool:
    order = {"deployments": 0, "flows": 1, "tasks": 2}
    if order[importer[0]] != order[target[0]]:
        return order[importer[0]] < order[target[0]]
    if importer[0] != "tasks" or importer == target or target == ("tasks", "shared"):
        return True
    # between stages: ingest may write to the store; nothing else crosses
    return (
        importer == ("tasks", "ingest")
        and target == ("tasks", "store")
        or (importer == ("tasks", "summarize") and target == ("tasks", "store"))
    )


def wrong_way_imports(found: dict[str, Path]) -> list[str]:
    wrong: list[str] = []
    for module, path in sorted(found.items()):
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for name in sorted(imported(path)):
            if name.split(".")[0] in FOLDERS:
                wrong.append(f"{where} imports the bare name {name}")
            elif name in found or name.rpartition(".")[0] in found:
                target = name if name in found else name.rpartition(".")[0]
                line = f"{where} ({'/'.join(layer(module))}) imports {target}"
                if not allowed(layer(module), layer(target)) and line not in wrong:
                    wrong.append(line)
    return wrong


def test_imports_run_one_way():
    assert wrong_way_imports(modules()) == []


def test_the_direction_check_catches_a_wrong_way_import(tmp_path):
    found = modules()
    bad = tmp_path / "retrieve.py"
    bad.write_text("from citesum.tasks.ingest.chunk import chunk_document\nimport tasks.settings\n")
    found["citesum.tasks.summarize.retrieve"] = bad
    assert len(wrong_way_imports(found)) == 2


def test_store_and_shared_modules_import_no_stage():
    assert not allowed(("tasks", "store"), ("tasks", "ingest"))
    assert not allowed(("tasks", "shared"), ("tasks", "summarize"))
    assert not allowed(("tasks", "summarize"), ("tasks", "ingest"))
    assert not allowed(("flows",), ("deployments",))
    assert not allowed(("tasks", "shared"), ("flows",))


def test_bare_names_are_not_importable():
    for name in FOLDERS:
        assert importlib.util.find_spec(name) is None, f"{name} is importable as a top-level module"
    # nor from a shell in the project folder (the editable install maps only citesum.*)
    for name in FOLDERS:
        done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd="/", capture_output=True, text=True)
        assert "ModuleNotFoundError" in done.stderr


def test_every_package_folder_is_declared():
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {m for m, p in modules().items() if p.name == "__init__.py"}
    assert declared == folders


@pytest.mark.slow
def test_the_wheel_holds_citesum_only(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("citesum-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"citesum"}
    assert "citesum/tasks/summarize/retrieve.py" in zipfile.ZipFile(wheel).namelist()
