"""Translations: gettext catalogs through Babel, the language of a request, locale formatting.

The catalogs live in ``palaver/locale/<lang>/LC_MESSAGES/palaver.po`` (the source, edited by
translators) with the compiled ``palaver.mo`` beside it (``scripts/i18n compile``; a test
checks the two agree). English is the source language: its text is the message id, so an
untranslated message shows in English.

The language being rendered is a context variable: a request or an email sets it once
(``use_language``) and everything rendered in that context (Jinja ``{% trans %}`` blocks,
``gettext`` calls in Python) follows it. The web client gets the same catalog, cut to the
messages of its modules, as JSON (``client_catalog``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime
from functools import cache, lru_cache
from gettext import c2py
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from babel import Locale
    from babel.support import NullTranslations

# Babel is imported by the first translation, locale formatting or client catalog, not at
# start-up: a server answering only the API never needs it (about 2 MiB; bench/queue_memory.py).

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "palaver"
SOURCE_LANGUAGE = "en"
# Scripts written right to left: <html dir="rtl"> for these.
RTL_LANGUAGES = frozenset({"ar", "he", "fa", "ur", "yi", "ps", "sd", "ug", "dv", "ckb"})

_current: ContextVar[str] = ContextVar("palaver_language", default=SOURCE_LANGUAGE)
# The Accept-Language header of the request being served, for the choice once the user is known.
_accept: ContextVar[str | None] = ContextVar("palaver_accept_language", default=None)


@lru_cache(maxsize=1)
def shipped_languages() -> tuple[str, ...]:
    """English plus every language with a compiled catalog, sorted."""
    found = {SOURCE_LANGUAGE}
    if LOCALE_DIR.is_dir():
        for entry in os.scandir(LOCALE_DIR):
            if (Path(entry.path) / "LC_MESSAGES" / f"{DOMAIN}.mo").is_file():
                found.add(entry.name)
    return tuple(sorted(found))


def supported(tag: str | None) -> str | None:
    """The shipped language a tag such as ``de``, ``de-AT`` or ``zh_Hans`` means, if any."""
    if not tag:
        return None
    tag = tag.strip().replace("_", "-").lower()
    languages = shipped_languages()
    if tag in languages:
        return tag
    base = tag.split("-", 1)[0]
    return base if base in languages else None


def accept_language(header: str | None) -> list[str]:
    """The language tags of an Accept-Language header, most wanted first (RFC 9110 12.5.4)."""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip()
        if not tag or tag == "*":
            continue
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            ranked.append((-quality, index, tag))
    return [tag for _, _, tag in sorted(ranked)]


def choose_language(
    user_language: str | None = None,
    realm_language: str | None = None,
    accept: str | None = None,
) -> str:
    """The language to render in: the user's setting, else the organization's, else the browser's.

    An organization's ``default_language`` of English is its untouched default, so on pages
    with no user (log in, sign up) it gives way to the browser's Accept-Language; any other
    language the organization chose is taken before the browser's.
    """
    chosen = supported(user_language)
    if chosen:
        return chosen
    realm_choice = supported(realm_language)
    if realm_choice and realm_choice != SOURCE_LANGUAGE:
        return realm_choice
    for tag in accept_language(accept):
        found = supported(tag)
        if found:
            return found
    return realm_choice or SOURCE_LANGUAGE


@cache
def translations(language: str) -> NullTranslations:
    from babel.support import NullTranslations, Translations  # noqa: PLC0415

    if language == SOURCE_LANGUAGE or language not in shipped_languages():
        return NullTranslations()
    return Translations.load(str(LOCALE_DIR), [language], DOMAIN)


def current_language() -> str:
    return _current.get()


def text_direction(language: str | None = None) -> str:
    code = (language or current_language()).split("-", 1)[0]
    return "rtl" if code in RTL_LANGUAGES else "ltr"


def set_language(language: str) -> None:
    """Render the rest of this context (a request's handler) in ``language``."""
    _current.set(supported(language) or SOURCE_LANGUAGE)


def set_request_language(user_language: str | None = None, realm_language: str | None = None) -> str:
    """Choose this request's language from what is known of it (``choose_language``)."""
    chosen = choose_language(user_language, realm_language, _accept.get())
    _current.set(chosen)
    return chosen


class LanguageByHeader:
    """``choose_language(accept=header)`` remembered per Accept-Language value.

    A browser sends one value for all its requests, so the same few values repeat; each is
    parsed once. The catalogs are fixed for the process (``shipped_languages``), so a
    remembered choice stays right. At most ``maxsize`` values are kept (the client picks
    them); the oldest goes first. No header is English without a look-up.
    """

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._chosen: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._chosen)

    def choose(self, header: str | None) -> str:
        if header is None:
            return SOURCE_LANGUAGE
        chosen = self._chosen.get(header)
        if chosen is None:
            chosen = choose_language(accept=header)
            if len(self._chosen) >= self.maxsize:
                del self._chosen[next(iter(self._chosen))]
            self._chosen[header] = chosen
        return chosen


class AcceptLanguageMiddleware:
    """Pages render in the browser's language until the handler knows the user or the realm."""

    def __init__(self, app: Any, cache_size: int = 256) -> None:
        self.app = app
        self.languages = LanguageByHeader(cache_size)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = None
            for key, value in scope["headers"]:
                if key == b"accept-language":
                    header = value.decode("latin-1")
                    break
            _accept.set(header)
            _current.set(SOURCE_LANGUAGE if header is None else self.languages.choose(header))
        await self.app(scope, receive, send)


@contextmanager
def use_language(language: str) -> Iterator[str]:
    token = _current.set(supported(language) or SOURCE_LANGUAGE)
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def N_(message: str) -> str:
    """Marks a message for extraction where it is defined; ``gettext`` translates it where used."""
    return message


def gettext(message: str, **values: Any) -> str:
    """``message`` in the current language, with ``%(name)s`` placeholders filled from ``values``."""
    text = translations(current_language()).ugettext(message)
    return text % values if values else text


def ngettext(singular: str, plural: str, n: int, **values: Any) -> str:
    """The form of the current language's plural rule for ``n``; ``%(num)s`` is ``n`` formatted."""
    text = translations(current_language()).ungettext(singular, plural, n)
    return text % {"num": format_number(n), **values}


def pgettext(context: str, message: str, **values: Any) -> str:
    text = translations(current_language()).upgettext(context, message)
    return text % values if values else text


def npgettext(context: str, singular: str, plural: str, n: int, **values: Any) -> str:
    text = translations(current_language()).unpgettext(context, singular, plural, n)
    return text % {"num": format_number(n), **values}


def _locale(language: str | None = None) -> Locale:
    from babel import Locale, UnknownLocaleError  # noqa: PLC0415

    try:
        return Locale.parse((language or current_language()).replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        return Locale.parse(SOURCE_LANGUAGE)


def format_number(value: float, language: str | None = None) -> str:
    from babel.numbers import format_decimal  # noqa: PLC0415

    return format_decimal(value, locale=_locale(language))


def format_date(value: date | datetime, style: str = "long", language: str | None = None) -> str:
    from babel.dates import format_date as babel_format_date  # noqa: PLC0415
    from babel.dates import format_datetime as babel_format_datetime  # noqa: PLC0415

    if isinstance(value, datetime):
        return babel_format_datetime(value, style, locale=_locale(language))
    return babel_format_date(value, style, locale=_locale(language))


def install(environment: Any) -> None:
    """Give a Jinja2 environment ``{% trans %}``, ``_()`` and the locale helpers, per context."""
    environment.add_extension("jinja2.ext.i18n")
    environment.policies["ext.i18n.trimmed"] = True
    # Jinja's new-style wrappers fill the placeholders (escaping them); these only look up.
    environment.install_gettext_callables(
        lambda s: translations(current_language()).ugettext(s),
        lambda s, p, n: translations(current_language()).ungettext(s, p, n),
        pgettext=lambda c, s: translations(current_language()).upgettext(c, s),
        npgettext=lambda c, s, p, n: translations(current_language()).unpgettext(c, s, p, n),
        newstyle=True,
    )
    environment.globals["current_language"] = current_language
    environment.globals["text_direction"] = text_direction
    environment.globals["format_date"] = format_date
    environment.globals["format_number"] = format_number


def is_client_location(filename: str) -> bool:
    return filename.endswith(".js")


@cache
def client_catalog(language: str) -> dict[str, Any]:
    """The web client's messages in ``language``: ``{"messages": {id: text | [forms]}}``.

    Only messages whose source is a client module are included (the first load carries one
    language's client strings, not the server's). Plural entries are keyed by the singular
    id; the client
    picks the form with ``Intl.PluralRules``, so each entry maps a CLDR category (one, few,
    other...) to its text.
    """
    language = supported(language) or SOURCE_LANGUAGE
    result: dict[str, Any] = {"language": language, "dir": text_direction(language), "messages": {}}
    if language == SOURCE_LANGUAGE:
        return result
    from babel.messages.pofile import read_po  # noqa: PLC0415

    path = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as handle:
        catalog = read_po(handle, locale=language)
    messages: dict[str, Any] = result["messages"]
    categories = plural_categories(language, catalog.plural_expr)
    for message in catalog:
        if not message.id or not message.string or message.fuzzy:
            continue
        if not any(is_client_location(filename) for filename, _ in message.locations):
            continue
        if isinstance(message.id, (list, tuple)):
            forms = list(message.string)
            if all(forms):
                messages[message.id[0]] = {
                    category: forms[index] for category, index in categories.items() if index < len(forms)
                }
        else:
            messages[message.id] = message.string
    return result


# Numbers that between them reach every CLDR plural category of the shipped languages.
_PLURAL_SAMPLES = (*range(0, 1001), 1_000_000, 2_000_000)


def plural_categories(language: str, plural_expr: str) -> dict[str, int]:
    """Which form of a catalog (its gettext ``plural=`` rule) each CLDR plural category takes."""
    pick = c2py(plural_expr)
    rule = _locale(language).plural_form
    mapping: dict[str, int] = {}
    for n in _PLURAL_SAMPLES:
        mapping.setdefault(rule(n), pick(n))
    return mapping


@cache
def client_catalog_json(language: str) -> str:
    """``client_catalog`` as JSON safe inside an HTML ``<script>`` element."""
    text = json.dumps(client_catalog(language), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
