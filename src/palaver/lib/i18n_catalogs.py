"""Keeping the catalogs: extract the messages of the sources, update each language, compile.

    python -m palaver.lib.i18n_catalogs update    # extract, then merge into every .po
    python -m palaver.lib.i18n_catalogs compile   # .po -> .mo
    python -m palaver.lib.i18n_catalogs add xx    # start a new language

Messages come from Python (``gettext``/``ngettext``/``_``), the Jinja2 templates (``{% trans %}``,
``_()``) and the web client's modules (``t("…")``, ``tn("…", "…", n)``), all through Babel's
extractors.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from palaver.lib.i18n import DOMAIN, LOCALE_DIR

PACKAGE_DIR = LOCALE_DIR.parent
KEYWORDS: dict[str, Any] = {
    "_": None,
    "N_": None,
    "gettext": None,
    "ngettext": (1, 2),
    "pgettext": ((1, "c"), 2),
    "npgettext": ((1, "c"), 2, 3),
    "t": None,
    "tn": (1, 2),
}
METHODS = [
    # Python that renders pages and emails calls palaver.lib.i18n.gettext / ngettext.
    ("web/**.py", "python"),
    ("web_pages/**.py", "python"),
    ("lib/email/**.py", "python"),
    ("templates/**.html", "jinja2"),
    ("templates/**.txt", "jinja2"),
    ("web/templates/**.html", "jinja2"),
    ("web/static/app/**.js", "javascript"),
]
OPTIONS = {
    "templates/**.txt": {"extensions": "jinja2.ext.i18n", "trimmed": "true"},
    "templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true"},
    "web/templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true"},
}


def extract() -> Catalog:
    """Every message of the sources, as a template catalog (no translations)."""
    catalog = Catalog(project="Palaver", domain=DOMAIN, charset="utf-8", fuzzy=False)
    for filename, lineno, message, comments, context in extract_from_dir(
        str(PACKAGE_DIR), METHODS, OPTIONS, KEYWORDS, comment_tags=("Translators:",)
    ):
        catalog.add(message, locations=[(filename, lineno)], auto_comments=comments, context=context)
    return catalog


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def languages() -> list[str]:
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def read(language: str) -> Catalog:
    with po_path(language).open("rb") as handle:
        return read_po(handle, locale=language, domain=DOMAIN)


def write(language: str, catalog: Catalog) -> None:
    path = po_path(language)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        write_po(handle, catalog, width=100, omit_header=False, sort_output=True)


def compiled(catalog: Catalog) -> bytes:
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    return buffer.getvalue()


def update(names: Iterable[str] | None = None) -> None:
    template = extract()
    for language in names or languages():
        catalog = read(language)
        catalog.update(template, no_fuzzy_matching=True)
        write(language, catalog)


def compile_all(names: Iterable[str] | None = None) -> None:
    for language in names or languages():
        po_path(language).with_suffix(".mo").write_bytes(compiled(read(language)))


def add(language: str) -> None:
    catalog = Catalog(locale=language, project="Palaver", domain=DOMAIN, charset="utf-8", fuzzy=False)
    catalog.update(extract(), no_fuzzy_matching=True)
    write(language, catalog)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"update", "compile", "add"}:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "update":
        update(argv[1:] or None)
    elif argv[0] == "compile":
        compile_all(argv[1:] or None)
    else:
        for language in argv[1:]:
            add(language)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
