"""The web client and the login page in the reader's language, German and Arabic (right to left)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser.client import channel_id, go, log_in, send, topic_hash, unique
from tests.web.conftest import LiveServer, NewPages, close_page, wait_for

NewPage = Callable[..., Any]
# The person whose language the tests change (no other browser test signs in as her).
READER = "desdemona"

PLURALS = """async () => {
  const links = [...document.querySelectorAll('link[rel=modulepreload]')];
  const i18n = await import(links.find((l) => l.href.includes('/i18n')).href);
  const vote = (n) => i18n.tn('{option}: {n} vote', '{option}: {n} votes', n, { option: 'A' });
  return [0, 1, 2, 3, 11, 100].map(vote);
}"""


# The labels of the sidebar's views, the feed's words for an empty conversation, the compose
# box's switch and the person's own row in the user list: once shown in English whatever the
# language, as literals that bypassed t().
FIXED_TEXT = """() => ({
  views: [...document.querySelectorAll('#left-sidebar .views .side-label')].map((el) => el.textContent),
  empty: document.querySelector('.feed-empty')?.textContent ?? null,
  switch: document.querySelector('.compose-recipient .link-button')?.textContent ?? null,
  me: [...document.querySelectorAll('#right-sidebar .user-name')].map((el) => el.textContent),
})"""


def fixed_text(page: Any, live_server: LiveServer) -> dict[str, Any]:
    """FIXED_TEXT in a topic nobody has written in, once its feed says it is empty."""
    stream_id = channel_id(live_server, READER, "design team")
    go(page, f"#narrow/channel/{stream_id}-design-team/topic/nothing.20here.20yet")
    wait_for(page, "document.querySelector('.feed-empty') !== null")
    text: dict[str, Any] = page.evaluate(FIXED_TEXT)
    return text


def set_language(live_server: LiveServer, language: str) -> None:
    with live_server.api(READER) as api:
        api.patch("/settings", data={"default_language": language}).raise_for_status()


@pytest.fixture
def reader_language(live_server: LiveServer, new_page: NewPages) -> Iterator[Callable[[str], None]]:
    yield lambda language: set_language(live_server, language)
    # The pages first: an open page told of the change reloads itself, and closing a page in
    # the middle of a reload can wait forever.
    new_page.close()
    set_language(live_server, "en")


def test_client_in_german_for_a_user_whose_language_is_german(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("de")
    page = log_in(live_server, new_page(), READER)
    html = page.locator("html")
    assert html.get_attribute("lang") == "de" and html.get_attribute("dir") == "ltr"
    # The shell (server-rendered) and the modules (t()) both speak German.
    page.get_by_role("button", name="Abmelden").wait_for()
    page.get_by_role("button", name="Einstellungen").wait_for()
    page.get_by_role("navigation", name="Kanäle und Unterhaltungen").get_by_text(
        "Kanäle", exact=True
    ).wait_for()
    assert page.evaluate(PLURALS)[:3] == ["A: 0 Stimmen", "A: 1 Stimme", "A: 2 Stimmen"]
    # The settings tabs and field labels are German too (they are passed around as values).
    page.get_by_role("button", name="Einstellungen").click()
    page.get_by_role("tab", name="Profil", exact=True).wait_for()
    page.get_by_role("tab", name="Präferenzen", exact=True).wait_for()
    page.locator("#settings-panel").get_by_label("Vollständiger Name").wait_for()
    page.keyboard.press("Escape")
    text = fixed_text(page, live_server)
    assert text["views"][:6] == [
        "Posteingang",
        "Letzte Unterhaltungen",
        "Erwähnungen",
        "Gefolgte Themen",
        "Markiert",
        "Alle Nachrichten",
    ]
    assert text["empty"] == "Hier gibt es noch keine Nachrichten."
    assert text["switch"] == "Stattdessen eine Direktnachricht"
    assert any(name.endswith(" (Sie)") for name in text["me"])
    close_page(page)


def test_client_in_arabic_is_right_to_left(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("ar")
    page = log_in(live_server, new_page(viewport={"width": 1280, "height": 800}), READER)
    html = page.locator("html")
    assert html.get_attribute("lang") == "ar" and html.get_attribute("dir") == "rtl"
    page.get_by_role("button", name="تسجيل الخروج").wait_for()
    page.get_by_text("الرسائل المباشرة", exact=True).first.wait_for()
    # Mirrored: the channels sidebar is on the right of the messages, the people on the left.
    left = page.locator("#left-sidebar").bounding_box()
    main = page.locator("#main").bounding_box()
    right = page.locator("#right-sidebar").bounding_box()
    assert left and main and right
    assert left["x"] > main["x"] > right["x"]
    assert page.evaluate("getComputedStyle(document.querySelector('#left-sidebar')).direction") == "rtl"
    # Arabic's six plural forms, chosen by Intl.PluralRules.
    assert page.evaluate(PLURALS) == [
        "A: لا أصوات",
        "A: صوت واحد",
        "A: صوتان",
        "A: 3 أصوات",
        "A: 11 صوتًا",
        "A: 100 صوت",
    ]
    text = fixed_text(page, live_server)
    assert text["views"][:6] == [
        "صندوق الوارد",
        "المحادثات الأخيرة",
        "الإشارات",
        "المواضيع المتابَعة",
        "المميّزة بنجمة",
        "كل الرسائل",
    ]
    assert text["empty"] == "لا توجد رسائل هنا بعد."
    assert text["switch"] == "رسالة مباشرة بدلًا من ذلك"
    assert any(name.endswith(" (أنت)") for name in text["me"])
    # The feed heading and the page title name the view in Arabic too.
    go(page, "#inbox")
    wait_for(page, "document.title.startsWith('صندوق الوارد') || document.title.includes(' صندوق الوارد - ')")
    close_page(page)


@pytest.mark.parametrize(
    ("locale", "heading", "button"),
    [
        ("ja-JP", "Browser Test Organization にログイン", "ログイン"),
        ("fr-FR", "Se connecter à Browser Test Organization", "Se connecter"),
        ("ar-EG", "سجّل الدخول إلى Browser Test Organization", "تسجيل الدخول"),
    ],
)
def test_login_page_follows_accept_language(
    live_server: LiveServer, new_page: NewPage, locale: str, heading: str, button: str
) -> None:
    page = new_page(locale=locale)
    page.goto(live_server.url + "/")
    page.get_by_role("heading", name=heading).wait_for()
    page.get_by_role("button", name=button).wait_for()
    assert page.locator("html").get_attribute("lang") == locale.split("-", maxsplit=1)[0]
    assert page.locator("html").get_attribute("dir") == ("rtl" if locale.startswith("ar") else "ltr")


# Whether each "#name" of a Latin-named channel is drawn "#" first, left of the name, in
# elements matching the selector (bdi isolates; options carry FSI ... PDI instead).
VISUAL_ORDER = """selector => [...document.querySelectorAll(selector)]
  .filter((el) => el.offsetParent)
  .map((el) => {
    const text = [...el.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.data.includes('#'));
    const at = text.data.indexOf('#');
    const box = (i) => {
      const r = document.createRange();
      r.setStart(text, i);
      r.setEnd(text, i + 1);
      return r.getBoundingClientRect();
    };
    return { text: el.textContent, hashLeftOfName: box(at).right <= box(at + 1).left + 0.5 };
  })"""


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 800}])
def test_channel_names_keep_their_hash_in_front_in_arabic(
    live_server: LiveServer,
    new_page: NewPage,
    reader_language: Callable[[str], None],
    viewport: dict[str, int],
) -> None:
    reader_language("ar")
    channel = "design team"
    stream_id = channel_id(live_server, READER, channel)
    page = log_in(live_server, new_page(viewport=viewport), READER)
    go(page, f"#narrow/channel/{stream_id}-design-team")
    # The feed heading and the recipient bars of the channel's messages.
    title = page.evaluate(VISUAL_ORDER, "#narrow-title bdi.channel-ref")
    assert title == [{"text": f"#{channel}", "hashLeftOfName": True}]
    # The page title holds no markup: the name is between FSI and PDI there.
    assert page.title().startswith(f"\u2068#{channel}\u2069 - ")
    # The pickers' options cannot hold markup: the name is between FSI and PDI.
    labels = page.evaluate("[...document.querySelectorAll('#compose-channel option')].map((o) => o.text)")
    assert f"\u2068#{channel}\u2069" in labels
    assert all(label.startswith("\u2068#") and label.endswith("\u2069") for label in labels)
    # Search suggestions for channels.
    search = page.locator("#search-input")
    if search.is_visible():
        search.fill("channel:desi")
        page.locator("#search-suggestions bdi.channel-ref").first.wait_for()
        shown = page.evaluate(VISUAL_ORDER, "#search-suggestions bdi.channel-ref")
        assert {"text": f"#{channel}", "hashLeftOfName": True} in shown
    close_page(page)


# The direction each field gives what is typed in it (dir=auto: from its first strong letter).
TYPED_DIRECTION = """text => ['#compose-content', '#compose-topic', '#search-input'].map((field) => {
  field = document.querySelector(field);
  field.value = text;
  field.dispatchEvent(new Event('input'));
  const typed = field.matches(':dir(rtl)') ? 'rtl' : 'ltr';
  field.value = '';
  field.dispatchEvent(new Event('input'));
  return [field.getAttribute('dir'), typed, getComputedStyle(field).direction];
})"""


@pytest.mark.parametrize(
    ("language", "typed", "direction"), [("en", "مرحبا بالجميع", "rtl"), ("ar", "hello all", "ltr")]
)
def test_message_topic_and_search_read_in_the_direction_of_what_is_typed(
    live_server: LiveServer,
    new_page: NewPage,
    reader_language: Callable[[str], None],
    language: str,
    typed: str,
    direction: str,
) -> None:
    reader_language(language)
    page = log_in(live_server, new_page(), READER)
    page_direction = "rtl" if language == "ar" else "ltr"
    assert page.locator("html").get_attribute("dir") == page_direction
    # Each field: its dir, the direction of the text typed, and that of the field emptied again
    # (showing its placeholder in the page's direction).
    field = ["auto", direction, page_direction]
    assert page.evaluate(TYPED_DIRECTION, typed) == [field, field, field]
    # Text in the page's own direction keeps it.
    own = "hello all" if language == "en" else "مرحبا بالجميع"
    field = ["auto", page_direction, page_direction]
    assert page.evaluate(TYPED_DIRECTION, own) == [field, field, field]
    close_page(page)


# Where each part of a message shows: its direction, and whether a paragraph's text starts
# at the content's left or right edge (within 2 px).
MESSAGE_LAYOUT = """id => {
  const content = document.querySelector(`#feed [data-id="${id}"] .msg-content`);
  const box = content.getBoundingClientRect();
  const side = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const text = range.getBoundingClientRect();
    if (Math.abs(text.left - box.left) <= 2) return 'left';
    return Math.abs(text.right - box.right) <= 2 ? 'right' : 'middle';
  };
  const [arabic, english] = content.querySelectorAll('p');
  return {
    message: content.matches(':dir(rtl)') ? 'rtl' : 'ltr',
    arabic: side(arabic),
    english: side(english),
    list: content.querySelector('ul').matches(':dir(rtl)') ? 'rtl' : 'ltr',
    code: getComputedStyle(content.querySelector('pre')).direction,
  };
}"""


@pytest.mark.parametrize("language", ["en", "ar"])
def test_a_message_reads_in_its_own_direction_in_either_page(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None], language: str
) -> None:
    """A message starting in Arabic is right to left in an English page, and an English
    paragraph of it is left to right in either page; code is always left to right."""
    reader_language(language)
    topic = unique("directions")
    content = "\n\n".join(
        ["مرحبا بالجميع! هذا اختبار.", "And an English line.", "* بند أول\n* second item", "```\nx = 1\n```"]
    )
    stream_id = channel_id(live_server, READER, "design team")
    message_id = send(live_server, READER, "design team", topic, content)
    page = log_in(live_server, new_page(), READER)
    go(page, topic_hash(stream_id, topic))
    page.locator(f'#feed [data-id="{message_id}"] pre').wait_for()
    layout = page.evaluate(MESSAGE_LAYOUT, message_id)
    assert layout == {"message": "rtl", "arabic": "right", "english": "left", "list": "rtl", "code": "ltr"}
    close_page(page)


def test_arabic_search_and_dialog_titles_keep_latin_words_in_order(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("ar")
    channel = "design team"
    stream_id = channel_id(live_server, READER, channel)
    page = log_in(live_server, new_page(viewport={"width": 1280, "height": 800}), READER)
    # The search operators are Latin words in an Arabic placeholder: one isolate keeps their
    # colons with them.
    search = page.locator("#search-input")
    assert search.get_attribute("dir") == "auto"
    assert search.get_attribute("placeholder") == "بحث (\u2068channel: topic: sender: is: has:\u2069)"
    # On a phone the box is too narrow for the operators: the hint is the one word.
    placeholder = "() => document.getElementById('search-input').placeholder"
    page.set_viewport_size({"width": 390, "height": 844})
    wait_for(page, f"() => ({placeholder})() === 'بحث'")
    page.set_viewport_size({"width": 1280, "height": 800})
    wait_for(page, f"() => ({placeholder})().startsWith('بحث (')")
    # A dialog's title names the channel between FSI and PDI, its "#" drawn in front.
    menu = page.locator(f'#left-sidebar .side-menu-button[data-stream-id="{stream_id}"]')
    menu.hover()
    menu.click()
    page.get_by_role("menuitem", name="إعدادات الإشعارات…").click()
    title = page.evaluate(VISUAL_ORDER, ".dialog h2")
    assert title == [{"text": f"إشعارات \u2068#{channel}\u2069", "hashLeftOfName": True}]
    page.keyboard.press("Escape")
    close_page(page)


def test_the_edited_tooltip_is_one_sentence_in_the_language_s_word_order(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("ja")
    topic = unique("edited")
    message_id = send(live_server, READER, "design team", topic, "first words")
    with live_server.api(READER) as api:
        api.patch(f"/messages/{message_id}", data={"content": "second words"}).raise_for_status()
    stream_id = channel_id(live_server, READER, "design team")
    page = log_in(live_server, new_page(), READER, topic_hash(stream_id, topic))
    edited = page.locator(f'article.message[data-id="{message_id}"] .edited')
    edited.wait_for()
    # Japanese puts the time first: "{time} に編集".
    title = edited.get_attribute("title")
    assert title and title.endswith(" に編集") and len(title) > len(" に編集")
    close_page(page)
