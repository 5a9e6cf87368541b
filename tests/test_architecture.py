"""Rules of the layering that docs alone would not keep.

The layer contracts themselves are import-linter's (``[tool.importlinter]`` in pyproject.toml,
run by ``lint-imports`` in scripts/test and by ``test_import_contracts_hold`` here).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

import grimp

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "palaver"

# Imports that still close a cycle; the same edges are in import-linter's ignore_imports.
# None are left: this set only shrinks, and a new cycle fails the test.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()


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
    # The pipeline's authentication looks the API key up with one query; views stay SQL-free.
    offenders = [o for o in offenders if not o.startswith("api/authentication.py")]
    assert offenders == []


def test_api_layer_does_not_open_transactions() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in _python_files("api")
        for line in _calls(path, "transaction")
    ]
    assert offenders == [], f"writes belong in actions/: {offenders}"


def test_no_import_cycles() -> None:
    """No module reaches itself through imports: for every import a -> b, b never leads back to a."""
    # Every import counts, those inside functions and under TYPE_CHECKING included.
    graph = grimp.build_graph("palaver", cache_dir=None)
    for importer, imported in KNOWN_CYCLE_EDGES:
        assert graph.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} -> {imported} is gone: remove it from KNOWN_CYCLE_EDGES and ignore_imports"
        )
        graph.remove_import(importer=importer, imported=imported)
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_import_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports is not None, "import-linter is a test dependency (pip install -e '.[test]')"
    result = subprocess.run(
        [lint_imports, "--no-logo", "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _private_name_check() -> ModuleType:
    path = ROOT / "scripts" / "check-private-imports"
    loader = SourceFileLoader("check_private_imports", str(path))
    spec = spec_from_loader(loader.name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_no_module_uses_another_modules_private_names() -> None:
    script = ROOT / "scripts" / "check-private-imports"
    result = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_private_name_check_finds_each_kind_of_use() -> None:
    source = """
from palaver.lib.markdown.state import _Collector, __all__, Collector
from .syntax import _USER_MENTION
from palaver.lib import register
import palaver.lib.markdown.urls
from tests import event_validation as validation

register._registry.clear()
palaver.lib.markdown.urls._TOPIC_URL.match("")
monkeypatch.setattr(register, "_discovered", True)
validation._failures
register.state_provider
Collector(None)._private_field
"""
    check = _private_name_check()
    found = [(line, name) for line, name, _ in check.hits(source, "palaver.lib.markdown.links")]
    assert sorted(found) == [
        (2, "_Collector"),
        (3, "_USER_MENTION"),
        (8, "_registry"),
        (9, "_TOPIC_URL"),
        (10, "_discovered"),
        (11, "_failures"),
    ]
    # A module's own private names, imported by a relative import of itself, are its own.
    assert list(check.hits("from .links import _file_name\n", "palaver.lib.markdown.links")) == []
