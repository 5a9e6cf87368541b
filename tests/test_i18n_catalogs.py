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


# The attributes h() shows (text/title/placeholder/label/alt/aria-label) and the properties
# of the DOM that hold what the person sees or hears.
VISIBLE_KEY = re.compile(
    r"""(?:(?<![\w.$"'])(?:text|title|placeholder|label|alt)\s*:|"(?:aria-label|title|placeholder|alt)"\s*:|\.(?:textContent|innerText|placeholder|title|innerHTML|ariaLabel|label)\s*=(?!=))\s*"""
)
STRING = re.compile(r"""(["'`])((?:(?!\1)[^\\]|\\.)*)\1""")
CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _shown_literals(source: str, at: int) -> list[tuple[int, str]]:
    """The literals of the expression starting at ``at`` that end up in what is shown: both
    arms of a ternary, the parts of a concatenation, inside grouping parentheses. A call's
    arguments (t(), formatDate(d, {…})) and object or array literals are the callee's own."""
    found: list[tuple[int, str]] = []
    depth, i = 0, at
    while i < len(source):
        char = source[i]
        if char in "\"'`":
            match = STRING.match(source, i)
            if not match:
                break
            found.append((i, match.group(2)))
            i = match.end()
            continue
        if char in "([{":
            before = source[:i].rstrip()[-1:]
            if char == "(" and not (before.isalnum() or before in "_$)]"):
                depth += 1
            else:
                i = _matching(source, i)
            i += 1
            continue
        if char == ")" and depth:
            depth -= 1
        elif char in ",;)]}" or source.startswith("=>", i):
            break
        i += 1
    return found


def _matching(source: str, at: int) -> int:
    """The index of the bracket closing the one at ``at`` (strings skipped)."""
    stack, i = [CLOSERS[source[at]]], at + 1
    while i < len(source) and stack:
        char = source[i]
        if char in "\"'`":
            match = STRING.match(source, i)
            i = match.end() if match else i + 1
            continue
        if char in CLOSERS:
            stack.append(CLOSERS[char])
        elif char == stack[-1]:
            stack.pop()
        i += 1
    return i - 1


def _reads_as_text(body: str) -> bool:
    return bool(LETTERS.search(NOT_TEXT.sub(" ", re.sub(r"\$\{[^}]*\}", "", body))))


def _bare_visible(source: str) -> list[str]:
    """Literals shown as they are: the value of a visible attribute or property."""
    source = JS_COMMENT.sub(lambda m: " " * len(m.group(0)), source)
    found = []
    for key in VISIBLE_KEY.finditer(source):
        for at, body in _shown_literals(source, key.end()):
            if _reads_as_text(body) and not _compared(source, at, at + len(body) + 2):
                found.append(f"{source.count(chr(10), 0, at) + 1}: {body}")
    return found


@pytest.mark.parametrize("path", CLIENT_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_client_strings_go_through_t(path: Path) -> None:
    bare = _bare_visible(path.read_text())
    assert not bare, f"wrap these in t(…) (app/i18n.js) in {path.name}:\n" + "\n".join(bare)


# Labels are also passed around as plain values (view lists, tab tuples, field(id, label, …),
# toast messages, a function's return), which no attribute names: anywhere in the client, a
# literal that reads like a label (a capitalised word, or a word in parentheses) must be the
# direct argument of t()/N_()/tn(), or be compared with something (a key's name).
# tn()'s second form is skipped with its first: the group takes `tn("…", `.
JS_LITERAL = re.compile(
    r"""(\b(?:t|N_)\(\s*|\btn\(\s*(["'`])(?:(?!\2)[^\\]|\\.)*\2\s*,\s*)?(["'`])((?:(?!\3)[^\\]|\\.)*)\3"""
)
JS_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))//[^\n]*")
# A word in parentheses is a label ("(you)"), a CSS feature with its value ("(max-width: …)") not.
LABEL_LIKE = re.compile(r"^[\s(…]*[A-Z][a-z]+\b|^\s*\([a-z]{2,}(?![a-z-]*:)")
# Names that are not translated: the product's, a browser API probed with `in window`, a
# protocol's, the keys a shortcut list shows on its key caps.
NOT_LABELS = {"Palaver", "Notification", "OpenID Connect", "Esc"}
COMPARED_BEFORE = re.compile(r"(?:[!=]==?|\bcase|\.(?:startsWith|endsWith|includes|indexOf)\()\s*$")
COMPARED_AFTER = re.compile(r"^\s*(?:[!=]==?|:)")


def _compared(source: str, start: int, end: int) -> bool:
    """Whether the literal at ``start:end`` is a value compared with (event.key === "Escape",
    case "Enter":, key.startsWith("Arrow")) or an object's key, rather than one shown."""
    return bool(
        COMPARED_BEFORE.search(source[max(0, start - 20) : start])
        or (COMPARED_AFTER.match(source[end : end + 30]) and not source[:start].rstrip().endswith(("?", ":")))
    )


def _bare_labels(source: str) -> list[str]:
    source = JS_COMMENT.sub(lambda m: " " * len(m.group(0)), source)
    found = []
    for match in JS_LITERAL.finditer(source):
        before, _, _, body = match.groups()
        if before:
            continue
        text = re.sub(r"\$\{[^}]*\}", "", body)
        if (
            LABEL_LIKE.search(text)
            and text not in NOT_LABELS
            and not _compared(source, match.start(3), match.end())
        ):
            found.append(f"{source.count(chr(10), 0, match.start()) + 1}: {body}")
    return found


@pytest.mark.parametrize("path", CLIENT_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_client_labels_go_through_t(path: Path) -> None:
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
    assert _bare_visible('h("button", { text: "Send" })') == ["1: Send"]
    assert _bare_visible('h("button", { text: t("Send"), class: "send" })') == []
    # Both arms of a ternary, a concatenation's parts, a property assignment.
    assert _bare_visible('h("p", { text: done ? "No messages here yet." : "Loading…" })') == [
        "1: No messages here yet.",
        "1: Loading…",
    ]
    assert _bare_visible('h("span", { text: name + (me ? " (you)" : "") })') == ["1:  (you)"]
    assert _bare_visible('el.textContent = on ? "reconnecting" : "";') == ["1: reconnecting"]
    assert (
        _bare_visible('{ text: formatDate(d, { dateStyle: "medium" }), title: a === "x" ? t("A") : "" }')
        == []
    )
    # Labels in arrays, as arguments and returned; a key's name compared is none.
    assert _bare_labels('[["#inbox", "Inbox"]]; link("#feed", "All messages", 0); return "Mentions";') == [
        "1: Inbox",
        "1: All messages",
        "1: Mentions",
    ]
    assert _bare_labels('toast(`Sent to ${where}`); where || "(no recipient)";') == [
        "1: Sent to ${where}",
        "1: (no recipient)",
    ]
    assert (
        _bare_labels('if (event.key === "Escape" || key.startsWith("Arrow")) {} case "Enter": {"Tab": 1}')
        == []
    )
    assert _bare_labels('const tabs = [["profile", "Profile"]]; field("x", "Full name", input);') == [
        "1: Profile",
        "1: Full name",
    ]
    assert _bare_labels('[["profile", t("Profile")]]; field("x", t("Full name"), i); // "Note"') == []
    assert _bare_labels('tn("One member", "Many members", n)') == []
