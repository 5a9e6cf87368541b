"""Personal settings in a real Chromium: avatar, time zone and format, text size and line
spacing, emoji set, notification sound and language, each saved through the panel and
applied live in the person's other open page."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any

from PIL import Image

from palaver.lib.i18n_catalogs import languages
from tests.web.browser.client import APP_READY, channel_id, open_section, send, topic_hash, unique
from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]


def user_settings(live_server: LiveServer, name: str) -> dict[str, Any]:
    with live_server.api(name) as api:
        response = api.post("/register", data={"fetch_event_types": json.dumps(["user_settings"])})
        response.raise_for_status()
        return dict(response.json()["user_settings"])


def reset(live_server: LiveServer, name: str, **values: Any) -> None:
    with live_server.api(name) as api:
        api.patch(
            "/settings", data={k: json.dumps(v) if not isinstance(v, str) else v for k, v in values.items()}
        ).raise_for_status()


def test_time_format_text_size_and_emoji_set_apply_in_every_open_page(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "othello", "general")
    topic = unique("display")
    send(live_server, "hamlet", "general", topic, "Good morning :smile:")
    reader = app_page("othello", topic_hash(general, topic))
    reader.locator(".msg-content", has_text="Good morning").wait_for()
    page = app_page("othello")
    panel = open_section(page, "Display & language")
    try:
        panel.get_by_label("Time format").select_option("true")
        wait_for(reader, "() => window.palaver.state.settings.twenty_four_hour_time === true")
        wait_for(reader, "() => !/AM|PM/i.test(document.querySelector('#feed time').textContent)")
        panel.get_by_label("Time format").select_option("false")
        wait_for(reader, "() => /AM|PM/i.test(document.querySelector('#feed time').textContent)")

        panel.get_by_label("Message text size (pixels)").select_option("20")
        panel.get_by_label("Line spacing (percent)").select_option("150")
        wait_for(
            reader,
            "() => { const s = getComputedStyle(document.querySelector('#feed .msg-content'));"
            " return s.fontSize === '20px' && s.lineHeight === '30px'; }",
        )
        assert reader.locator("#feed .msg-content img.emoji-img").count() >= 1
        panel.get_by_label("Emoji style").select_option("text")
        reader.locator("#feed .msg-content .emoji-text", has_text=":smile:").wait_for()
        assert user_settings(live_server, "othello")["emojiset"] == "text"
    finally:
        reset(
            live_server,
            "othello",
            twenty_four_hour_time=False,
            web_font_size_px=16,
            web_line_height_percent=140,
            emojiset="google",
        )


def test_time_zone_and_notification_sound_are_saved_and_the_sound_plays(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("othello")
    panel = open_section(page, "Display & language")
    try:
        panel.get_by_label("Time zone (shown to others with your local time)").select_option("Asia/Tokyo")
        wait_for(page, "() => window.palaver.state.settings.timezone === 'Asia/Tokyo'")
        assert user_settings(live_server, "othello")["timezone"] == "Asia/Tokyo"
        panel.get_by_label("Sound for direct messages and mentions").select_option("ding")
        wait_for(page, "() => window.palaver.state.settings.notification_sound === 'ding'")
        panel.get_by_role("button", name="Play sound").click()
        wait_for(page, "() => document.body.dataset.lastSound === 'ding'")
        # A direct message rings it, in a page whose settings came from the event.
        page.evaluate("() => { delete document.body.dataset.lastSound; }")
        othello_id = page.evaluate("window.palaver.state.myId")
        with live_server.api("hamlet") as api:
            api.post(
                "/messages", data={"type": "direct", "to": json.dumps([othello_id]), "content": "Ring"}
            ).raise_for_status()
        wait_for(page, "() => document.body.dataset.lastSound === 'ding'")
    finally:
        reset(live_server, "othello", timezone="", notification_sound="zulip")
        with live_server.api("othello") as api:
            api.post("/mark_all_as_read").raise_for_status()


def test_choosing_a_language_switches_the_page(live_server: LiveServer, app_page: AppPage) -> None:
    page = app_page("hamlet")
    panel = open_section(page, "Display & language")
    # The choices are the server's catalogs, English first.
    offered = (
        panel.get_by_label("Language of the interface")
        .locator("option")
        .evaluate_all("options => options.map((o) => o.value)")
    )
    assert offered[0] == "en" and sorted(offered) == sorted(["en", *languages()])
    try:
        with page.expect_navigation():
            panel.get_by_label("Language of the interface").select_option("de")
        wait_for(page, APP_READY)
        assert page.evaluate("document.documentElement.lang") == "de"
        page.get_by_role("button", name="Einstellungen").click()
        page.get_by_role("tab", name="Anzeige & Sprache").click()
        assert page.get_by_label("Sprache der Oberfläche").input_value() == "de"
        # The other way round: changed elsewhere, the open page follows.
        with page.expect_navigation(timeout=15_000):
            reset(live_server, "hamlet", default_language="en")
        wait_for(page, APP_READY)
        assert page.evaluate("document.documentElement.lang") == "en"
    finally:
        reset(live_server, "hamlet", default_language="en")


def png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (80, 80), colour).save(out, format="PNG")
    return out.getvalue()


def test_an_avatar_is_uploaded_shown_to_others_and_deleted(
    live_server: LiveServer, app_page: AppPage, tmp_path: Any
) -> None:
    picture = tmp_path / "me.png"
    picture.write_bytes(png("purple"))
    page = app_page("iago")
    iago_id = page.evaluate("window.palaver.state.myId")
    other = app_page("othello")
    panel = open_section(page, "Avatar")
    panel.get_by_label("Picture").set_input_files(str(picture))
    panel.get_by_role("button", name="Upload avatar").click()
    uploaded = (
        "(id) => { const u = window.palaver.state.users.get(id).avatar_url;"
        " return u && !u.includes('/user_avatars/generated/') && u; }"
    )
    url = wait_for(other, uploaded, iago_id)
    wait_for(page, "(url) => document.querySelector('.avatar-preview img')?.src.endsWith(url)", url)
    wait_for(page, "() => document.querySelector('.avatar-preview img').naturalWidth > 0")
    panel.get_by_role("button", name="Delete avatar").click()
    wait_for(
        other,
        "(id) => window.palaver.state.users.get(id).avatar_url.includes('/user_avatars/generated/')",
        iago_id,
    )
    panel.get_by_role("button", name="Delete avatar").wait_for(state="hidden")


def test_settings_opened_before_the_app_has_registered_open_once_it_has(
    live_server: LiveServer, app_page: AppPage
) -> None:
    # app_page reports any uncaught exception of the page as a failure.
    page = app_page("othello").context.new_page()
    held: list[Any] = []

    def hold(route: Any) -> None:  # Playwright wants a Python function, not a bound builtin
        held.append(route)

    page.route("**/json/register", hold)
    page.route("**/api/v1/register", hold)
    page.goto(live_server.url + "/")
    page.get_by_role("button", name="Settings").click()
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page did not ask for /register"
    assert page.evaluate("window.palaver.state") is None
    assert page.locator("#settings-overlay").count() == 0
    for route in held:
        route.continue_()
    page.get_by_role("tab", name="Profile", exact=True).wait_for()
    page.locator("#settings-panel").get_by_label("Full name").wait_for()
    assert page.evaluate(APP_READY)
