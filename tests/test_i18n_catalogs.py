"""CI check: every user-visible string goes through the translation layer, and every catalog
translates every message.

Run ``python -m palaver.lib.i18n_catalogs update`` after adding a string, translate it in each
``src/palaver/locale/<lang>/LC_MESSAGES/palaver.po``, then ``... compile``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from palaver.lib.i18n_catalogs import compiled, extract, languages, po_path, read

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "palaver"
# Templates whose text is translated (the pages a signed-out person sees, the app shell, emails).
TEMPLATES = sorted(
    [
        *(PACKAGE / "templates" / "email").iterdir(),
        *(PACKAGE / "templates" / "pages").iterdir(),
        PACKAGE / "web" / "templates" / "login.html",
        PACKAGE / "web" / "templates" / "no_realm.html",
        PACKAGE / "web" / "templates" / "passkey_login.html",
        PACKAGE / "web" / "templates" / "sso_error.html",
        PACKAGE / "web" / "templates" / "two_factor.html",
        PACKAGE / "web" / "templates" / "two_factor_setup.html",
        PACKAGE / "web" / "templates" / "app.html",
    ]
)
CLIENT_MODULES = sorted((PACKAGE / "web" / "static" / "app").rglob("*.js"))
PLACEHOLDER = re.compile(r"%\((\w+)\)s|\{(\w+)\}")
LETTERS = re.compile(r"[^\W\d_]{2,}")


def placeholders(text: str) -> set[str]:
    return {a or b for a, b in PLACEHOLDER.findall(text)}


@pytest.fixture(scope="module")
def template_catalog():  # type: ignore[no-untyped-def]
    return extract()


def test_five_languages_ship() -> None:
    assert {"de", "fr", "es", "ja", "ar"} <= set(languages())


@pytest.mark.parametrize("language", languages())
def test_catalog_translates_every_message(language: str, template_catalog) -> None:  # type: ignore[no-untyped-def]
    catalog = read(language)
    missing, untranslated, broken = [], [], []
    for message in template_catalog:
        if not message.id:
            continue
        entry = catalog.get(message.id, context=message.context)
        if entry is None:
            missing.append(message.id)
            continue
        sources = tuple(message.id) if isinstance(message.id, tuple) else (str(message.id),)
        forms = (
            tuple(str(f or "") for f in entry.string)
            if isinstance(entry.string, tuple)
            else (str(entry.string or ""),)
        )
        if entry.fuzzy or not all(forms) or len(forms) != (catalog.num_plurals if len(sources) > 1 else 1):
            untranslated.append(message.id)
            continue
        wanted = placeholders(sources[-1])
        # A plural form may leave the number out ("رسالة واحدة"), never add or rename one.
        if any(not placeholders(form) <= wanted | placeholders(sources[0]) for form in forms) or (
            len(sources) == 1 and placeholders(forms[0]) != wanted
        ):
            broken.append(message.id)
    assert not missing, f"{language}: not in the catalog (run i18n_catalogs update): {missing}"
    assert not untranslated, f"{language}: not translated: {untranslated}"
    assert not broken, f"{language}: placeholders differ from the English: {broken}"


@pytest.mark.parametrize("language", languages())
def test_compiled_catalog_matches_its_source(language: str) -> None:
    mo = po_path(language).with_suffix(".mo")
    assert mo.read_bytes() == compiled(read(language)), (
        f"run: python -m palaver.lib.i18n_catalogs compile {language}"
    )


# Literals given to what the person sees: h()'s text/title/placeholder/label/alt/aria-label
# attributes and assignments to textContent/placeholder/title/innerHTML.
JS_VISIBLE = re.compile(
    r"""(?:(?<![\w.$])(?:text|title|placeholder|label|alt)\s*:|"aria-label"\s*:|\.(?:textContent|placeholder|title|innerHTML|ariaLabel)\s*=)\s*(["'`])((?:(?!\1)[^\\]|\\.)*)\1"""
)


@pytest.mark.parametrize("path", CLIENT_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_client_strings_go_through_t(path: Path) -> None:
    source = path.read_text()
    bare = [
        f"{path.name}:{source.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for m in JS_VISIBLE.finditer(source)
        if LETTERS.search(NOT_TEXT.sub(" ", re.sub(r"\$\{[^}]*\}", "", m.group(2))))
    ]
    assert not bare, "wrap these in t(…) (app/i18n.js):\n" + "\n".join(bare)


# The settings modules pass labels around as plain values (tab tuples, field(id, label, …),
# toast messages), which JS_VISIBLE cannot see: there, any literal that reads like a label
# (a capitalised word) must be the direct argument of t()/N_()/tn().
SETTINGS_MODULES = sorted((PACKAGE / "web" / "static" / "app" / "views").glob("settings*.js"))
# tn()'s second form is skipped with its first: the group takes `tn("…", `.
JS_LITERAL = re.compile(
    r"""(\b(?:t|N_)\(\s*|\btn\(\s*(["'`])(?:(?!\2)[^\\]|\\.)*\2\s*,\s*)?(["'`])((?:(?!\3)[^\\]|\\.)*)\3"""
)
JS_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))//[^\n]*")
LABEL_LIKE = re.compile(r"^[A-Z][a-z]+\b")
# Names that are not translated: a browser API probed with `in window`, a protocol's name.
NOT_LABELS = {"Notification", "OpenID Connect"}


def _bare_labels(source: str) -> list[str]:
    source = JS_COMMENT.sub(lambda m: " " * len(m.group(0)), source)
    found = []
    for match in JS_LITERAL.finditer(source):
        before, _, _, body = match.groups()
        if before:
            continue
        text = re.sub(r"\$\{[^}]*\}", "", body)
        if LABEL_LIKE.search(text) and text not in NOT_LABELS:
            found.append(f"{source.count(chr(10), 0, match.start()) + 1}: {body}")
    return found


@pytest.mark.parametrize("path", SETTINGS_MODULES, ids=lambda p: p.name)
def test_settings_labels_go_through_t(path: Path) -> None:
    bare = _bare_labels(path.read_text())
    assert not bare, f"wrap these in t(…) in {path.name}:\n" + "\n".join(bare)


VISIBLE_ATTRIBUTES = re.compile(r"""\b(?:title|placeholder|alt|aria-label)\s*=\s*"([^"]*)\"""")
# Words that are not sentences to translate: the product's name, URL paths, entities, and
# sample values (addresses, identifiers such as "party_parrot").
NOT_TEXT = re.compile(r"\bPalaver\b|\S*[/@_]\S*|&\w+;")


def _untranslated_text(source: str) -> list[str]:
    """Text a reader sees that is outside ``{% trans %}`` blocks."""
    text = re.sub(r"{%-?\s*trans\b.*?{%-?\s*endtrans\s*-?%}", " ", source, flags=re.S)
    text = re.sub(r"{{.*?}}|{%.*?%}|{#.*?#}", "\0", text, flags=re.S)
    text = re.sub(r"<(style|script)\b.*?</\1>", " ", text, flags=re.S | re.I)
    found = [value for value in VISIBLE_ATTRIBUTES.findall(text) if LETTERS.search(NOT_TEXT.sub(" ", value))]
    text = re.sub(r"<!--.*?-->|<[^>]*>", " ", text, flags=re.S)
    found += [line for line in text.splitlines() if LETTERS.search(NOT_TEXT.sub(" ", line))]
    return [f.strip() for f in found]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_template_text_goes_through_trans(path: Path) -> None:
    assert not _untranslated_text(path.read_text()), "wrap in {% trans %}…{% endtrans %}"


def test_the_checks_catch_bare_strings() -> None:
    assert _untranslated_text("<p>{% trans %}Hello{% endtrans %}</p>") == []
    assert _untranslated_text('<p title="Greeting">Hello</p>') == ["Greeting", "Hello"]
    assert JS_VISIBLE.search('h("button", { text: "Send" })')
    assert not JS_VISIBLE.search('h("button", { text: t("Send") })')
    assert _bare_labels('const tabs = [["profile", "Profile"]]; field("x", "Full name", input);') == [
        "1: Profile",
        "1: Full name",
    ]
    assert _bare_labels('[["profile", t("Profile")]]; field("x", t("Full name"), i); // "Note"') == []
    assert _bare_labels('tn("One member", "Many members", n)') == []
