"""The web client's daily features in a real Chromium: images, the phone layout, triage."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Response

from tests.web.browser.client import channel_id, log_in, send, topic_hash, unique
from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]
NewPage = Callable[..., Any]
PHONE = {"width": 390, "height": 800}


@pytest.fixture(autouse=True, scope="module")
def leave_everything_read(live_server: LiveServer) -> Iterator[None]:
    """The server is shared by the whole session: later tests find nobody with unread messages."""
    yield
    for name in live_server.users:
        with live_server.api(name) as api:
            api.post("/mark_all_as_read").raise_for_status()


def png(colour: str, size: tuple[int, int] = (120, 80)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def upload(live_server: LiveServer, name: str, filename: str, body: bytes) -> str:
    with live_server.api(name) as api:
        response = api.post("/user_uploads", files={"filename": (filename, body, "image/png")})
        response.raise_for_status()
        return str(response.json()["url"])


def test_pictures_open_in_a_viewer_with_keys_download_and_the_original(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    topic = unique("pictures")
    red = upload(live_server, "othello", "red.png", png("red"))
    blue = upload(live_server, "othello", "blue.png", png("blue", (60, 90)))
    send(live_server, "othello", "general", topic, f"[red.png]({red})\n[blue.png]({blue})")
    page = app_page("hamlet", topic_hash(general, topic))
    # The thumbnails load with the session cookie (once made; a placeholder until then).
    thumbnails_loaded = (
        "() => [...document.querySelectorAll('.message_inline_image img')]"
        ".filter((i) => i.src.includes('/user_uploads/thumbnail/') && i.complete && i.naturalWidth > 0)"
        ".length === 2"
    )
    wait_for(page, thumbnails_loaded, timeout=20)
    page.locator(".message_inline_image img").first.click()
    viewer = page.get_by_role("dialog", name="Image viewer")
    viewer.wait_for()
    # The tab stays on the app: the picture opens over it.
    assert "#narrow/" in page.url
    assert viewer.get_by_text("1 of 2").is_visible()
    picture = viewer.locator("img.lightbox-image")
    wait_for(page, "() => document.querySelector('.lightbox-image').naturalWidth === 120")
    assert viewer.get_by_role("link", name="Download").get_attribute("href") == red
    assert viewer.get_by_role("link", name="Download").get_attribute("download") == "red.png"
    assert viewer.get_by_role("link", name="Open original").get_attribute("href") == red
    page.keyboard.press("ArrowRight")
    viewer.get_by_text("2 of 2").wait_for()
    assert picture.get_attribute("src") == blue
    wait_for(page, "() => document.querySelector('.lightbox-image').naturalWidth === 60")
    page.keyboard.press("ArrowRight")
    viewer.get_by_text("1 of 2").wait_for()
    page.keyboard.press("ArrowLeft")
    viewer.get_by_text("2 of 2").wait_for()
    assert "Othello, the Moor of Venice" in viewer.inner_text()
    page.keyboard.press("Escape")
    viewer.wait_for(state="detached")


def test_the_tab_icon_carries_the_unread_count(live_server: LiveServer, app_page: AppPage) -> None:
    with live_server.api("othello") as api:
        api.post("/mark_all_as_read").raise_for_status()
    page = app_page("othello", "#inbox")
    plain = page.locator('link[rel="icon"]').get_attribute("href")
    assert plain and plain.endswith("favicon.svg")
    topic = unique("icon")
    channel_id(live_server, "othello", "general")
    send(live_server, "hamlet", "general", topic, "Something to read")
    wait_for(page, "() => document.querySelector('link[rel=icon]').href.startsWith('data:image/png')")
    assert page.title().startswith("(1) ")
    with live_server.api("othello") as api:
        api.post("/mark_all_as_read").raise_for_status()
    wait_for(page, "() => document.querySelector('link[rel=icon]').href.endsWith('favicon.svg')")


def test_on_a_phone_settings_scroll_and_log_out_is_there(live_server: LiveServer, new_page: NewPage) -> None:
    page = new_page(viewport=PHONE)
    log_in(live_server, page, "iago")
    page.get_by_role("button", name="Settings").click()
    tabs = page.get_by_role("tablist", name="Settings sections")
    tabs.wait_for()
    box = tabs.bounding_box()
    assert box and box["width"] <= PHONE["width"]
    # Every tab can be reached (the row scrolls) and opens its section.
    page.get_by_role("tab", name="Organization", exact=True).click()
    assert page.get_by_role("tab", name="Organization", exact=True).get_attribute("aria-selected") == "true"
    page.get_by_role("button", name="Log out").click()
    page.get_by_label("Email").wait_for()
    assert page.url.rstrip("/") == live_server.url


def test_on_a_phone_recent_conversations_fit_and_toasts_stack(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel_id(live_server, "hamlet", "general")
    topic = unique("a rather long topic name for a phone screen")
    send(live_server, "othello", "general", topic, "Long topics fit")
    page = app_page("hamlet", "#recent", viewport=PHONE)
    row = page.locator(".recent-table tr", has_text=topic)
    row.wait_for()
    box = row.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    link = row.get_by_role("link", name=topic)
    link_box = link.bounding_box()
    assert link_box and link_box["x"] + link_box["width"] <= PHONE["width"]
    dom = page.evaluate("document.querySelector('link[rel=modulepreload][href$=\"views/dom.js\"]').href")
    five = "async (url) => { const m = await import(url); for (let i = 1; i < 6; i++) m.toast(`N ${i}`); }"
    page.evaluate(five, dom)
    toasts = page.locator("#toasts .toast")
    assert toasts.all_inner_texts() == ["N 3", "N 4", "N 5"]
    # Clear of the compose box, and gone after a while.
    compose = page.locator("#compose").bounding_box()
    last = toasts.last.bounding_box()
    assert last and (compose is None or last["y"] + last["height"] < compose["y"])
    toasts.first.click()
    assert toasts.count() == 2
    wait_for(page, "() => !document.querySelector('#toasts .toast')", timeout=5)


# Reading and triage -------------------------------------------------------------------------


def server_unread_count(live_server: LiveServer, name: str) -> int:
    """The unread count the server's /register gives: what the client must show."""
    with live_server.api(name) as api:
        response = api.post("/register", data={"fetch_event_types": '["message", "update_message_flags"]'})
        response.raise_for_status()
        return int(response.json()["unread_msgs"]["count"])


def client_unread_count(page: Any) -> int:
    return int(page.evaluate("window.palaver.counts().total"))


def read_everything(live_server: LiveServer, *names: str) -> None:
    for name in names:
        with live_server.api(name) as api:
            api.post("/mark_all_as_read").raise_for_status()


def test_a_muted_topic_leaves_only_the_muters_unread_count(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    read_everything(live_server, "hamlet", "othello")
    topic = unique("noise")
    othello = app_page("othello", "#inbox")
    hamlet = app_page("hamlet", "#inbox")
    send(live_server, "iago", "general", topic, "One")
    send(live_server, "iago", "general", topic, "Two")
    for page in (othello, hamlet):
        wait_for(page, "() => document.title.startsWith('(2) ')")
    othello.get_by_role("button", name=f"Actions for topic {topic}").click()
    othello.get_by_role("menuitem", name="Mute topic").click()
    wait_for(othello, "() => !document.title.startsWith('(')")
    # The Inbox leaves it out; the count is the server's.
    othello.get_by_role("link", name=topic).wait_for(state="detached")
    assert client_unread_count(othello) == server_unread_count(live_server, "othello") == 0
    # The other person's count is untouched.
    assert hamlet.title().startswith("(2) ")
    assert client_unread_count(hamlet) == server_unread_count(live_server, "hamlet") == 2
    # Unmuted from Recent conversations' "Include muted".
    othello.evaluate("location.hash = '#recent'")
    othello.get_by_role("checkbox", name="Include muted").check()
    othello.locator(".recent-table tr.muted", has_text=topic).wait_for()
    read_everything(live_server, "hamlet", "othello")


def test_follow_a_topic_from_its_recipient_bar_and_find_it_in_followed_topics(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    topic = unique("follow me")
    send(live_server, "othello", "general", topic, "Worth following")
    page = app_page("hamlet", topic_hash(general, topic))
    page.locator(".recipient-bar .topic-menu-button").first.click()
    page.get_by_role("menuitem", name="Follow topic").click()
    page.locator(".recipient-bar .topic-mark", has_text="followed").first.wait_for()
    nav = page.get_by_role("navigation", name="Channels and conversations")
    nav.get_by_role("link", name="Followed topics").click()
    # The message shows in the topic's view too: wait for the new view's title first.
    page.locator("#narrow-title", has_text="Followed topics").wait_for()
    page.locator("article.message", has_text="Worth following").wait_for()
    assert page.locator("#narrow-title").inner_text() == "Followed topics"
    with live_server.api("hamlet") as api:
        state = api.post("/register", data={"fetch_event_types": '["user_topic"]'}).raise_for_status().json()
    assert any(t["topic_name"] == topic and t["visibility_policy"] == 3 for t in state["user_topics"])


def test_channel_menu_mutes_pins_and_sets_notifications(live_server: LiveServer, app_page: AppPage) -> None:
    sandbox = channel_id(live_server, "hamlet", "sandbox")
    read_everything(live_server, "hamlet")
    page = app_page("hamlet", "#inbox")
    nav = page.get_by_role("navigation", name="Channels and conversations")
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Mute channel").click()
    nav.locator("li.muted", has_text="sandbox").wait_for()
    send(live_server, "othello", "sandbox", unique("quiet"), "Nobody hears this")
    nav.locator(".muted-badge").first.wait_for()
    assert client_unread_count(page) == server_unread_count(live_server, "hamlet") == 0
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Unmute channel").click()
    wait_for(page, "() => document.title.startsWith('(1) ')")
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Pin channel to top").click()
    wait_for(page, "() => document.querySelector('.channels li .side-label').textContent === 'sandbox'")
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Notification settings…").click()
    page.get_by_label("Desktop notifications").select_option("true")
    page.get_by_role("button", name="Save").click()
    wait_for(page, f"() => window.palaver.state.subs.get({sandbox}).desktop_notifications === true")
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Unpin channel").click()
    wait_for(page, f"() => !window.palaver.state.subs.get({sandbox}).pin_to_top")
    nav.get_by_role("button", name="Actions for #sandbox").click()
    page.get_by_role("menuitem", name="Mark all messages as read").click()
    wait_for(page, "() => !document.title.startsWith('(')")


def test_the_inbox_lists_direct_messages_before_the_channels(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel_id(live_server, "hamlet", "general")
    read_everything(live_server, "hamlet")
    send(live_server, "othello", "general", unique("older"), "Older, in a channel")
    with live_server.api("hamlet") as api:
        hamlet_id = api.get("/users/me").raise_for_status().json()["user_id"]
    with live_server.api("othello") as api:
        api.post("/messages", data={"type": "direct", "to": f"[{hamlet_id}]", "content": "Newer, direct"})
    page = app_page("hamlet", "#inbox")
    headings = page.locator(".inbox-heading")
    wait_for(page, "() => document.querySelectorAll('.inbox-heading').length >= 2")
    assert "Direct messages" in headings.first.inner_text()
    assert "general" in headings.nth(1).inner_text()


def test_mark_all_as_read_asks_first(live_server: LiveServer, app_page: AppPage) -> None:
    channel_id(live_server, "hamlet", "general")
    read_everything(live_server, "hamlet")
    page = app_page("hamlet", "#recent", viewport=PHONE)
    send(live_server, "othello", "general", unique("pile"), "Unread one")
    wait_for(page, "() => document.title.startsWith('(1) ')")
    page.get_by_role("button", name="Channels and conversations").click()
    page.get_by_role("button", name="Mark all as read").click()
    dialog = page.get_by_role("dialog", name="Mark all messages as read?")
    dialog.get_by_role("button", name="Cancel").click()
    assert page.title().startswith("(1) ")
    page.get_by_role("button", name="Mark all as read").click()
    dialog.get_by_role("button", name="Mark all as read").click()
    wait_for(page, "() => !document.title.startsWith('(')")
    assert server_unread_count(live_server, "hamlet") == 0


def test_mark_as_unread_from_here_stays_unread(live_server: LiveServer, app_page: AppPage) -> None:
    general = channel_id(live_server, "hamlet", "general")
    topic = unique("again")
    for text in ("First", "Second", "Third"):
        send(live_server, "othello", "general", topic, f"{text} {topic}")
    read_everything(live_server, "hamlet")
    page = app_page("hamlet", topic_hash(general, topic))
    row = page.locator("article.message", has_text=f"Second {topic}")
    row.click()
    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name="Mark as unread from here").click()
    wait_for(page, "() => document.title.startsWith('(2) ')")
    page.wait_for_timeout(800)
    assert page.title().startswith("(2) ")
    assert server_unread_count(live_server, "hamlet") == 2
    read_everything(live_server, "hamlet")


def test_recent_conversations_filter_to_those_i_took_part_in(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel_id(live_server, "hamlet", "general")
    mine = unique("mine")
    theirs = unique("theirs")
    send(live_server, "hamlet", "general", mine, "I said this")
    send(live_server, "othello", "general", theirs, "Othello said this")
    page = app_page("hamlet", "#recent")
    page.get_by_role("link", name=theirs).wait_for()
    page.get_by_role("checkbox", name="Participated").check()
    page.get_by_role("link", name=theirs).wait_for(state="detached")
    assert page.get_by_role("link", name=mine).is_visible()
    page.get_by_role("checkbox", name="Participated").uncheck()
    page.get_by_role("checkbox", name="Unread").check()
    page.get_by_role("link", name=mine).wait_for(state="detached")
    assert page.get_by_role("link", name=theirs).is_visible()
    page.get_by_role("checkbox", name="Unread").uncheck()
    read_everything(live_server, "hamlet")


# People -------------------------------------------------------------------------------------


def test_a_status_shows_on_the_other_persons_screen_and_in_the_profile_card(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    topic = unique("status")
    send(live_server, "hamlet", "general", topic, "Back in five")
    with live_server.api("desdemona") as api:
        response = api.post("/realm/profile_fields", data={"name": unique("Pronouns"), "field_type": "1"})
        response.raise_for_status()
        field_id = response.json()["id"]
        fields = api.get("/realm/profile_fields").raise_for_status().json()["custom_fields"]
    field_name = next(f["name"] for f in fields if f["id"] == field_id)
    with live_server.api("hamlet") as api:
        hamlet_id = api.get("/users/me").raise_for_status().json()["user_id"]
        api.patch("/settings", data={"timezone": "Europe/Copenhagen"}).raise_for_status()
    with live_server.api("desdemona") as api:
        api.patch(
            f"/users/{hamlet_id}", data={"profile_data": f'[{{"id": {field_id}, "value": "he/him"}}]'}
        ).raise_for_status()
    hamlet = app_page("hamlet", topic_hash(general, topic))
    othello = app_page("othello", topic_hash(general, topic), viewport=PHONE)

    hamlet.get_by_role("button", name="Set your status…").click()
    status = hamlet.get_by_role("dialog", name="Set your status")
    status.get_by_role("button", name="In a meeting").click()
    wait_for(hamlet, "() => document.querySelector('.status-emoji-button img') !== null")
    status.get_by_role("button", name="Save").click()
    status.wait_for(state="detached")

    # The other person sees it beside the name on the message, and in the profile card.
    othello.locator("article.message .status-emoji[title=':calendar: In a meeting']").wait_for()
    othello.locator("article.message .sender-name", has_text="King Hamlet").click()
    card = othello.get_by_role("dialog", name="Profile of King Hamlet")
    card.get_by_text("In a meeting").wait_for()
    assert "Member" in card.inner_text()
    card.get_by_text("Local time").wait_for()
    card.get_by_text(field_name).wait_for()
    assert card.get_by_text("he/him").is_visible()
    box = card.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    card.get_by_role("button", name="Send direct message").click()
    wait_for(othello, "() => window.palaver.compose.mode === 'dm'")

    hamlet.get_by_role("button", name="Set your status…").click()
    hamlet.get_by_role("dialog", name="Set your status").get_by_role("button", name="Clear status").click()
    othello.locator("article.message .status-emoji").first.wait_for(state="detached")


def test_an_administrator_sees_manage_in_the_profile_card(live_server: LiveServer, app_page: AppPage) -> None:
    page = app_page("iago", "#inbox")
    people = page.get_by_role("complementary", name="People")
    people.get_by_role("button", name="Profile of Othello, the Moor of Venice").click()
    card = page.get_by_role("dialog", name="Profile of Othello, the Moor of Venice")
    card.get_by_role("button", name="Manage this user").wait_for()
    card.get_by_role("button", name="View messages").click()
    wait_for(page, "() => location.hash.startsWith('#narrow/sender/')")


# Writing ------------------------------------------------------------------------------------


def test_a_poll_vote_and_a_new_option_show_for_the_other_person(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    topic = unique("lunch poll")
    send(live_server, "othello", "general", topic, "/poll Where for lunch?\nPizza\nSushi")
    hamlet = app_page("hamlet", topic_hash(general, topic))
    othello = app_page("othello", topic_hash(general, topic), viewport=PHONE)
    poll = hamlet.get_by_role("group", name="Poll: Where for lunch?")
    poll.get_by_role("button", name="Pizza: 0 votes").click()
    theirs = othello.get_by_role("group", name="Poll: Where for lunch?")
    theirs.get_by_role("button", name="Pizza: 1 vote").wait_for()
    assert "(King Hamlet)" in theirs.inner_text()
    theirs.get_by_label("New option").fill("Tacos")
    theirs.get_by_role("button", name="Add option").click()
    poll.get_by_role("button", name="Tacos: 0 votes").click()
    theirs.get_by_role("button", name="Tacos: 1 vote").wait_for()
    # A second press takes the vote back.
    poll.get_by_role("button", name="Pizza: 1 vote").click()
    theirs.get_by_role("button", name="Pizza: 0 votes").wait_for()
    # A poll sent from the compose box arrives live as a poll.
    hamlet.get_by_label("Message", exact=True).fill("/poll Tea or coffee?\nTea\nCoffee")
    hamlet.get_by_label("Message", exact=True).press("Enter")
    othello.get_by_role("group", name="Poll: Tea or coffee?").get_by_role(
        "button", name="Tea: 0 votes"
    ).wait_for()


def test_a_todo_list_is_checked_off_by_one_and_seen_by_the_other(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    topic = unique("chores")
    send(
        live_server,
        "hamlet",
        "general",
        topic,
        "/todo Before Friday\nBuy milk\nCall the smith: about the sword",
    )
    hamlet = app_page("hamlet", topic_hash(general, topic))
    othello = app_page("othello", topic_hash(general, topic))
    todo = othello.get_by_role("group", name="To-do list: Before Friday")
    todo.get_by_label("Buy milk").check()
    mine = hamlet.get_by_role("group", name="To-do list: Before Friday")
    wait_for(hamlet, "() => document.querySelector('.todo-tasks li.done') !== null")
    assert mine.get_by_label("Buy milk").is_checked()
    assert not mine.get_by_label("Call the smith: about the sword").is_checked()
    mine.get_by_label("New task").fill("Polish armour: both sets")
    mine.get_by_role("button", name="Add task").click()
    todo.get_by_label("Polish armour: both sets").wait_for()


def test_code_blocks_are_highlighted_by_language_in_light_and_dark(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    topic = unique("code")
    send(live_server, "othello", "general", topic, "```python\ndef f(x):\n    return x  # same\n```")
    colours = []
    for scheme in ("light", "dark"):
        page = app_page("hamlet", topic_hash(general, topic), color_scheme=scheme)
        block = page.locator('.codehilite[data-code-language="Python"]')
        block.wait_for()
        colour = "(sel) => getComputedStyle(document.querySelector(sel)).color"
        keyword = page.evaluate(colour, ".codehilite .k")
        comment = page.evaluate(colour, ".codehilite .c1")
        plain = page.evaluate(colour, ".codehilite code")
        assert len({keyword, comment, plain}) == 3, (keyword, comment, plain)
        colours.append(keyword)
    assert colours[0] != colours[1]


def test_the_compose_toolbar_formats_and_previews_through_the_server(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    page = app_page("hamlet", topic_hash(general, unique("toolbar")))
    box = page.get_by_label("Message", exact=True)
    box.fill("hello")
    box.select_text()
    toolbar = page.get_by_role("toolbar", name="Formatting")
    toolbar.get_by_role("button", name="Bold").click()
    assert box.input_value() == "**hello**"
    box.press("End")
    toolbar.get_by_role("button", name="Add a poll").click()
    assert "/poll Question\nOption 1\nOption 2" in box.input_value()
    box.fill("**hello** and `code` and $$x^2$$")
    toolbar.get_by_role("button", name="Preview").click()
    preview = page.locator(".compose-preview")
    preview.locator("strong", has_text="hello").wait_for()
    assert preview.locator("code", has_text="code").count() == 1
    assert preview.locator(".katex, math").count() >= 1
    toolbar.get_by_role("button", name="Edit").click()
    box.wait_for()
    assert box.input_value() == "**hello** and `code` and $$x^2$$"
    box.fill("")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_compose_toolbar_fits_a_phone(live_server: LiveServer, app_page: AppPage, scheme: str) -> None:
    """Every button of the toolbar is on screen at 390 px, none scrolled out of view, once the
    message box is tapped."""
    general = channel_id(live_server, "hamlet", "general")
    page = app_page(
        "hamlet", topic_hash(general, unique("phone toolbar")), viewport=PHONE, color_scheme=scheme
    )
    page.get_by_label("Message", exact=True).click()
    toolbar = page.get_by_role("toolbar", name="Formatting")
    toolbar.get_by_role("button", name="Preview").wait_for()
    buttons = toolbar.get_by_role("button").all()
    assert len(buttons) >= 14
    for button in buttons:
        found = button.bounding_box()
        assert found is not None, button
        assert found["x"] >= 0 and found["x"] + found["width"] <= PHONE["width"], (
            button.get_attribute("aria-label"),
            found,
        )
    bar = toolbar.evaluate("el => [el.scrollWidth, el.clientWidth]")
    assert bar[0] <= bar[1], bar


def test_on_a_phone_the_compose_box_is_one_line_until_used(
    live_server: LiveServer, app_page: AppPage
) -> None:
    """At 390 px an empty compose box not in use is its message box alone, naming where the
    message goes; tapping it brings the recipient, toolbar and buttons; text keeps them."""
    general = channel_id(live_server, "hamlet", "general")
    topic = unique("phone compose")
    page = app_page("hamlet", topic_hash(general, topic), viewport=PHONE)
    box = page.get_by_label("Message", exact=True)
    wait_for(page, "t => document.getElementById('compose-content').placeholder.includes(t)", topic)
    assert "#general" in (box.get_attribute("placeholder") or "")
    toolbar = page.get_by_role("toolbar", name="Formatting")
    send_button = page.get_by_role("button", name="Send", exact=True)
    assert not toolbar.is_visible() and not send_button.is_visible()
    assert not page.get_by_label("Topic", exact=True).is_visible()
    collapsed = page.locator("#compose").bounding_box()
    assert collapsed is not None and collapsed["height"] < 70, collapsed
    box.click()
    toolbar.wait_for()
    assert send_button.is_visible() and page.get_by_label("Topic", exact=True).input_value() == topic
    box.fill("half a thought")
    # Tapping the feed's heading leaves the box.
    page.mouse.click(200, 67)
    wait_for(page, "() => !document.getElementById('compose').contains(document.activeElement)")
    assert toolbar.is_visible() and send_button.is_visible()
    box.fill("")
    page.mouse.click(200, 67)
    toolbar.wait_for(state="hidden")
    # A wide screen keeps the whole compose box in view.
    page.set_viewport_size({"width": 1280, "height": 800})
    toolbar.wait_for()


def test_saved_snippets_are_added_and_inserted(live_server: LiveServer, app_page: AppPage) -> None:
    general = channel_id(live_server, "hamlet", "general")
    page = app_page("hamlet", topic_hash(general, unique("snippets")))
    title = unique("Greeting")
    page.get_by_role("toolbar", name="Formatting").get_by_role("button", name="Saved snippets").click()
    panel = page.get_by_role("dialog", name="Saved snippets")
    # The form is open when there are no snippets yet.
    panel.get_by_text("Add a snippet").wait_for()
    if not panel.get_by_label("Title").is_visible():
        panel.get_by_text("Add a snippet").click()
    panel.get_by_label("Title").fill(title)
    panel.get_by_label("Content").fill("Good morrow, sweet lord!")
    panel.get_by_role("button", name="Save snippet").click()
    panel.locator("button.draft-restore", has_text=title).click()
    assert page.get_by_label("Message", exact=True).input_value() == "Good morrow, sweet lord!"
    page.get_by_label("Message", exact=True).fill("")


def test_schedule_a_message_list_it_and_cancel_it(live_server: LiveServer, app_page: AppPage) -> None:
    general = channel_id(live_server, "hamlet", "general")
    page = app_page("hamlet", topic_hash(general, unique("later")), viewport=PHONE)
    text = unique("Remember the play")
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_role("button", name="Send later…").click()
    dialog = page.get_by_role("dialog", name="Schedule message")
    dialog.get_by_role("button", name="In one hour").click()
    dialog.get_by_role("button", name="Schedule").click()
    dialog.wait_for(state="detached")
    assert page.get_by_label("Message", exact=True).input_value() == ""
    with live_server.api("hamlet") as api:
        scheduled = api.get("/scheduled_messages").raise_for_status().json()["scheduled_messages"]
    assert any(s["content"] == text for s in scheduled)
    page.get_by_role("button", name=f"Scheduled ({len(scheduled)})").click()
    listing = page.get_by_role("dialog", name="Scheduled messages")
    item = listing.locator("li", has_text=text)
    item.get_by_role("button", name="Cancel message").click()
    wait_for(page, "() => !document.querySelector('.scheduled-list')")
    with live_server.api("hamlet") as api:
        left = api.get("/scheduled_messages").raise_for_status().json()["scheduled_messages"]
    assert not any(s["content"] == text for s in left)


def test_source_history_receipts_and_a_reminder_from_the_message_menu(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    topic = unique("menu")
    message_id = send(live_server, "hamlet", "general", topic, "**Original** words")
    with live_server.api("hamlet") as api:
        api.patch(f"/messages/{message_id}", data={"content": "**Edited** words"}).raise_for_status()
    with live_server.api("othello") as api:
        api.post(
            "/messages/flags", data={"messages": f"[{message_id}]", "op": "add", "flag": "read"}
        ).raise_for_status()
    page = app_page("hamlet", topic_hash(general, topic))
    row = page.locator("article.message", has_text="Edited words")

    def menu(item: str) -> None:
        row.click()
        row.get_by_role("button", name="More actions").click()
        page.get_by_role("menuitem", name=item).click()

    menu("View source")
    source = page.get_by_role("dialog", name="Message source")
    assert source.locator("pre").inner_text() == "**Edited** words"
    source.get_by_role("button", name="Close").click()
    menu("View edit history")
    history = page.get_by_role("dialog", name="Message edit history")
    history.locator("strong", has_text="Original").wait_for()
    assert history.locator("strong", has_text="Edited").count() >= 1
    history.get_by_role("button", name="Close").click()
    menu("View read receipts")
    receipts = page.get_by_role("dialog", name="Read receipts")
    receipts.get_by_text("Othello, the Moor of Venice").wait_for()
    receipts.get_by_role("button", name="Close").click()
    menu("Remind me about this…")
    page.get_by_role("dialog", name="Remind me about this message").get_by_role(
        "button", name="Set reminder"
    ).click()
    page.get_by_text("Reminder set for").wait_for()
    with live_server.api("hamlet") as api:
        reminders = api.get("/reminders").raise_for_status().json()["reminders"]
    assert any(r["reminder_target_message_id"] == message_id for r in reminders)


def test_search_suggests_operators_people_and_channels_as_one_types(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel_id(live_server, "hamlet", "general")
    page = app_page("hamlet", "#inbox")
    search = page.get_by_role("searchbox", name="Search messages")
    search.click()
    search.press_sequentially("sen")
    listbox = page.get_by_role("listbox", name="Search suggestions")
    listbox.get_by_role("option", name="sender:").wait_for()
    search.press("ArrowDown")
    listbox.locator("li.active", has_text="sender:").wait_for()
    search.press("Enter")
    wait_for(page, "() => document.getElementById('search-input').value === 'sender:'")
    search.press_sequentially("oth")
    listbox.get_by_role("option", name="Othello, the Moor of Venice").click()
    wait_for(page, "() => location.hash.startsWith('#narrow/sender/')")
    # The page has handled the new hash once the box shows the narrow it parsed (the chosen
    # suggestion's text ends in a space); a person starts the next search after that.
    wait_for(page, "() => document.getElementById('search-input').value === 'sender:othello@example.com'")
    search.fill("")
    search.press_sequentially("gen")
    listbox.get_by_role("option", name="#general").click()
    wait_for(page, "() => location.hash.startsWith('#narrow/channel/')")


# Organization life --------------------------------------------------------------------------


def test_invite_by_email_with_a_role_and_channels_then_revoke(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago", "#inbox")
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("tab", name="Invitations").click()
    email = f"{unique('guest').replace(' ', '-')}@example.com"
    page.get_by_label("Emails (separated by commas or new lines)").fill(email)
    page.locator("#invite-role").select_option("600")
    page.get_by_role("group", name="Channels they join").first.get_by_label("general").check()
    page.get_by_role("button", name="Send invitations").click()
    row = page.locator(".settings-table tr", has_text=email)
    row.wait_for()
    assert "Guest" in row.inner_text()
    page.get_by_role("button", name="Create a reusable link").click()
    link = page.get_by_label("Invitation link", exact=True)
    wait_for(
        page, "() => document.querySelector('input.api-key') && document.querySelector('input.api-key').value"
    )
    assert "/join/" in link.input_value()
    row.get_by_role("button", name=f"Revoke invitation for {email}").click()
    row.wait_for(state="detached")


def test_custom_emoji_upload_shows_everywhere_and_delete(live_server: LiveServer, app_page: AppPage) -> None:
    name = unique("parrot").replace(" ", "_")
    page = app_page("iago", "#inbox")
    other = app_page("hamlet", "#inbox")
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("tab", name="Custom emoji").click()
    page.get_by_label("Name (lower-case letters, digits, _ and -)").fill(name)
    page.get_by_label("Image").set_input_files(
        {"name": "parrot.png", "mimeType": "image/png", "buffer": png("green", (64, 64))}
    )
    page.get_by_role("button", name="Add emoji").click()
    page.locator(".emoji-admin code", has_text=f":{name}:").wait_for()
    wait_for(other, f"() => Object.values(window.palaver.state.emoji).some((e) => e.name === '{name}')")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"Delete :{name}:").click()
    page.locator(".emoji-admin code", has_text=f":{name}:").wait_for(state="detached")


def test_an_administrator_renames_and_describes_a_channel_from_its_menu(
    live_server: LiveServer, app_page: AppPage
) -> None:
    name = unique("plans").replace(" ", "-")
    with live_server.api("iago") as api:
        api.post(
            "/users/me/subscriptions", data={"subscriptions": f'[{{"name": "{name}"}}]'}
        ).raise_for_status()
    channel_id(live_server, "hamlet", name)
    iago = app_page("iago", "#inbox")
    hamlet = app_page("hamlet", "#inbox")
    nav = iago.get_by_role("navigation", name="Channels and conversations")
    nav.get_by_role("button", name=f"Actions for #{name}").click()
    iago.get_by_role("menuitem", name="Channel settings…").click()
    # The title holds the channel between FSI and PDI.
    settings = iago.get_by_role("dialog", name=f"Settings of \u2068#{name}\u2069")
    settings.get_by_role("list", name="Subscribers").get_by_text("King Hamlet").wait_for()
    settings.get_by_label("Name", exact=True).fill(name + "-renamed")
    settings.get_by_label("Description").fill("Where plans are made")
    settings.get_by_role("button", name="Save").click()
    hamlet_nav = hamlet.get_by_role("navigation", name="Channels and conversations")
    hamlet_nav.get_by_role("link", name=name + "-renamed").wait_for()
    with live_server.api("hamlet") as api:
        streams = api.get("/streams").raise_for_status().json()["streams"]
    assert any(s["name"] == name + "-renamed" and s["description"] == "Where plans are made" for s in streams)


def test_no_request_of_a_page_with_pictures_is_missing(live_server: LiveServer, app_page: AppPage) -> None:
    """Every file a page with an uploaded picture asks for exists, the loading placeholder
    the server puts in a message until the thumbnails are made included."""
    from palaver.lib.thumbnails import LOADING_PLACEHOLDER

    general = channel_id(live_server, "hamlet", "general")
    topic = unique("placeholder")
    # Sent at once after the upload: the message may well render before its thumbnails exist.
    green = upload(live_server, "othello", "green.png", png("green", (200, 150)))
    send(live_server, "othello", "general", topic, f"[green.png]({green})")
    missing: list[str] = []
    page = app_page("hamlet")

    def note_missing(response: Response) -> None:
        if response.status == 404:
            missing.append(response.url)

    page.on("response", note_missing)
    page.goto(live_server.url + "/" + topic_hash(general, topic))
    wait_for(page, "window.palaver && window.palaver.state !== null")
    wait_for(
        page,
        "() => [...document.querySelectorAll('.message_inline_image img')]"
        ".some((i) => i.src.includes('/user_uploads/thumbnail/') && i.complete && i.naturalWidth > 0)",
        timeout=20,
    )
    # The placeholder itself is a picture the browser draws.
    width = page.evaluate(
        """(src) => new Promise((done) => {
            const img = new Image();
            img.onload = () => done(img.naturalWidth);
            img.onerror = () => done(-1);
            img.src = src;
        })""",
        LOADING_PLACEHOLDER,
    )
    assert width == 40
    assert missing == []
