"""Rules of the layering that docs alone would not keep."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "palaver"


def _python_files(folder: str) -> list[Path]:
    return sorted((SRC / folder).rglob("*.py"))


def _calls(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text())
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == name:
                lines.append(node.lineno)
    return lines


def test_only_actions_send_events() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        if "actions" not in path.parts
        for line in _calls(path, "send_event")
    ]
    assert offenders == [], f"events must be sent from actions/: {offenders}"


def test_api_layer_has_no_sql() -> None:
    forbidden = {"select", "insert", "update", "delete", "text"}
    offenders = []
    for path in _python_files("api"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sqlalchemy"):
                names = {alias.name for alias in node.names}
                if names & forbidden:
                    offenders.append(f"{path.relative_to(SRC)}: imports {sorted(names & forbidden)}")
    # The shared request pipeline authenticates with one query; views themselves stay SQL-free.
    offenders = [o for o in offenders if not o.startswith("api/routing.py")]
    assert offenders == []


def test_api_layer_does_not_open_transactions() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in _python_files("api")
        for line in _calls(path, "transaction")
    ]
    assert offenders == [], f"writes belong in actions/: {offenders}"
