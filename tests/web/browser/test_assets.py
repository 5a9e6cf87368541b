"""Static facts about the web client's files: the emoji table is current, the first load is small."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from palaver.lib.emoji import all_emoji_names, emoji_code_for_name

STATIC = Path(__file__).resolve().parents[3] / "src" / "palaver" / "web" / "static"
# Static imports only: `import(...)` (settings, emoji table) loads later, on first use.
IMPORT = re.compile(r'^(?:import|export)\s[^;]*?from\s+"(\.[^"]+)";', re.MULTILINE | re.DOTALL)
FIRST_LOAD_LIMIT = 250 * 1024


def emoji_table() -> dict[str, str]:
    return {name: code for name in sorted(all_emoji_names()) if (code := emoji_code_for_name(name))}


def test_emoji_names_json_matches_the_servers_table() -> None:
    """Regenerate with
    ``python -c 'from tests.web.browser.test_assets import write_emoji_table as w; w()'``."""
    shipped = json.loads((STATIC / "app" / "emoji" / "names.json").read_text())
    assert shipped == emoji_table()


def write_emoji_table() -> None:
    text = json.dumps(emoji_table(), separators=(",", ":"), sort_keys=True) + "\n"
    (STATIC / "app" / "emoji" / "names.json").write_text(text)


def first_load_files() -> list[Path]:
    seen: list[Path] = []
    pending = [STATIC / "app" / "main.js"]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.append(path)
        for target in IMPORT.findall(path.read_text()):
            pending.append((path.parent / target).resolve())
    return [*seen, STATIC / "css" / "app.css"]


def test_first_load_is_small_and_has_no_inline_script_or_style() -> None:
    files = first_load_files()
    compressed = sum(len(gzip.compress(f.read_bytes(), 9)) for f in files)
    print(f"first load: {len(files)} files, {compressed} bytes gzip")
    assert compressed < FIRST_LOAD_LIMIT
    template = (STATIC.parent / "templates" / "app.html").read_text()
    assert "<style" not in template and "style=" not in template
    # Every executable script is a file the CSP allows; the one inline element is the page's
    # message catalog, a JSON data block, which browsers never run (its text is escaped by
    # lib/i18n.client_catalog_json so it cannot close the element).
    inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", template)
    assert inline == ['<script type="application/json" id="i18n-catalog">'], inline
    assert not re.search(r"\son[a-z]+=", template)
    for path in STATIC.joinpath("app").rglob("*.js"):
        source = path.read_text()
        assert "eval(" not in source and "new Function" not in source, path
        assert "javascript:" not in source, path


def test_the_shell_preloads_every_first_load_module() -> None:
    """app.html lists the modules for <link rel=modulepreload>; the import graph is the truth."""
    template = (STATIC.parent / "templates" / "app.html").read_text()
    listed = set(re.findall(r'"(app/[^"]+\.js)"', template))
    modules = [f for f in first_load_files() if f.suffix == ".js" and f.name != "main.js"]
    wanted = {str(f.relative_to(STATIC)) for f in modules}
    assert listed == wanted
