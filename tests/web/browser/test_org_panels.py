"""The organization's settings panels in a real Chromium: bots, user groups, linkifiers,
code playgrounds, default channels and permissions, each changed through the panel and
each following a change another client makes through the API while it is open."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.web.browser.client import accept_dialogs, channel_id, open_section, unique
from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]


def realm_state(live_server: LiveServer, name: str, *keys: str) -> dict[str, Any]:
    with live_server.api(name) as api:
        response = api.post(
            "/register",
            data={"fetch_event_types": json.dumps(["realm", "realm_user_groups", "default_streams"])},
        )
        response.raise_for_status()
        data = response.json()
        return {key: data[key] for key in keys}


def group_id(live_server: LiveServer, name: str) -> int:
    groups = realm_state(live_server, "desdemona", "realm_user_groups")["realm_user_groups"]
    return int(next(g["id"] for g in groups if g["name"] == name))


def test_bots_are_created_their_keys_shown_and_regenerated_and_deactivated(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago")
    accept_dialogs(page)
    panel = open_section(page, "Bots")
    name = unique("Build bot")
    short = "build" + name.split()[-1]
    panel.get_by_label("Bot name").fill(name)
    panel.get_by_label("Bot email (the part before -bot@)").fill(short)
    panel.get_by_label("Bot type").select_option(label="Generic bot")
    panel.get_by_role("button", name="Create bot").click()
    row = panel.locator(".bot-row:not(.inactive)", has_text=name)
    row.wait_for()
    assert f"{short}-bot@" in row.inner_text()
    row.get_by_role("button", name=f"Show API key of {name}").click()
    first_key = row.locator(".api-key").inner_text()
    assert len(first_key) == 32
    zuliprc = row.get_by_role("link", name="Download zuliprc")
    assert zuliprc.get_attribute("download") == "zuliprc"
    row.get_by_role("button", name=f"Regenerate API key of {name}").click()
    wait_for(
        page,
        "([name, old]) => { const r = [...document.querySelectorAll('.bot-row')]"
        ".find((e) => e.textContent.includes(name)); const k = r && r.querySelector('.api-key');"
        " return k && k.textContent.length === 32 && k.textContent !== old; }",
        [name, first_key],
    )
    # An outgoing webhook needs its endpoint.
    hook = unique("Hook bot")
    panel.get_by_label("Bot name").fill(hook)
    panel.get_by_label("Bot email (the part before -bot@)").fill("hook" + hook.split()[-1])
    panel.get_by_label("Bot type").select_option(label="Outgoing webhook")
    panel.get_by_label("Endpoint URL").fill("https://hooks.example.com/palaver")
    panel.get_by_role("button", name="Create bot").click()
    panel.locator(".bot-row", has_text=hook).wait_for()
    assert "Outgoing webhook" in panel.locator(".bot-row", has_text=hook).inner_text()
    row.get_by_role("button", name=f"Deactivate {name}").click()
    row.wait_for(state="detached")
    with live_server.api("iago") as api:
        bots = api.get("/bots").json()["bots"]
    assert name not in {b["full_name"] for b in bots}
    assert hook in {b["full_name"] for b in bots}
    # Administrators bring a deactivated bot back.
    panel.get_by_role("heading", name="Deactivated bots").wait_for()
    panel.get_by_role("button", name=f"Reactivate {name}").click()
    panel.locator(".bot-row:not(.inactive)", has_text=name).wait_for()
    with live_server.api("iago") as api:
        assert name in {b["full_name"] for b in api.get("/bots").json()["bots"]}


def test_an_open_bots_panel_shows_a_bot_made_elsewhere(live_server: LiveServer, app_page: AppPage) -> None:
    page = app_page("desdemona")
    panel = open_section(page, "Bots")
    name = unique("Elsewhere bot")
    with live_server.api("iago") as api:
        api.post(
            "/bots", data={"full_name": name, "short_name": "else" + name.split()[-1]}
        ).raise_for_status()
    panel.locator(".bot-row", has_text=name).wait_for()


def test_members_without_permission_read_but_cannot_create_bots(
    live_server: LiveServer, app_page: AppPage
) -> None:
    with live_server.api("desdemona") as api:
        everyone_but_guests = group_id(live_server, "role:members")
        admins = group_id(live_server, "role:administrators")
        api.patch("/realm", data={"can_create_bots_group": json.dumps({"new": admins})}).raise_for_status()
        api.patch(
            "/realm", data={"can_create_write_only_bots_group": json.dumps({"new": admins})}
        ).raise_for_status()
    try:
        page = app_page("hamlet")
        panel = open_section(page, "Bots")
        panel.get_by_text("The organization does not let you create bots.").wait_for()
        assert panel.get_by_role("button", name="Create bot").count() == 0
        # Administrators' sections are not offered to members.
        assert page.get_by_role("tab", name="Organization permissions").count() == 0
    finally:
        with live_server.api("desdemona") as api:
            for setting in ("can_create_bots_group", "can_create_write_only_bots_group"):
                api.patch(
                    "/realm", data={setting: json.dumps({"new": everyone_but_guests})}
                ).raise_for_status()


def test_user_groups_are_created_renamed_given_members_and_deactivated(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago")
    accept_dialogs(page)
    panel = open_section(page, "User groups")
    name = unique("designers")
    panel.locator("#group-create-name").fill(name)
    panel.locator("#group-create-description").fill("People who draw")
    panel.get_by_role("button", name="Create group").click()
    detail = panel.get_by_role("region", name=f"Group {name}")
    detail.wait_for()
    assert "Iago" in detail.locator(".group-members").inner_text()
    detail.get_by_label("Add a member (email or full name)").fill("hamlet@example.com")
    detail.get_by_role("button", name="Add", exact=True).click()
    detail.locator(".group-members", has_text="King Hamlet").wait_for()
    detail.get_by_text("2 members").wait_for()
    renamed = name + " team"
    detail.get_by_label("Group name").fill(renamed)
    detail.get_by_role("button", name="Save group").click()
    renamed_detail = panel.get_by_role("region", name=f"Group {renamed}")
    renamed_detail.wait_for()
    renamed_detail.get_by_role("button", name=f"Remove King Hamlet from {renamed}").click()
    renamed_detail.get_by_text("1 member", exact=True).wait_for()
    with live_server.api("hamlet") as api:
        groups = api.get("/user_groups").json()["user_groups"]
    group = next(g for g in groups if g["name"] == renamed)
    assert group["description"] == "People who draw"
    members = realm_state(live_server, "iago", "realm_user_groups")["realm_user_groups"]
    assert next(g for g in members if g["name"] == renamed)["members"] == [
        page.evaluate("window.palaver.state.myId")
    ]
    renamed_detail.get_by_role("button", name="Deactivate group").click()
    renamed_detail.wait_for(state="detached")
    assert panel.get_by_role("button", name=renamed).count() == 0


def test_an_open_groups_panel_follows_changes_made_elsewhere(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("hamlet")
    panel = open_section(page, "User groups")
    name = unique("reviewers")
    hamlet_id = page.evaluate("window.palaver.state.myId")
    with live_server.api("iago") as api:
        made = api.post(
            "/user_groups/create", data={"name": name, "description": "Read drafts", "members": "[]"}
        )
        made.raise_for_status()
        new_id = made.json()["group_id"]
        panel.get_by_role("button", name=name).wait_for()
        panel.get_by_role("button", name=name).click()
        detail = panel.get_by_role("region", name=f"Group {name}")
        detail.get_by_text("No members.").wait_for()
        api.post(f"/user_groups/{new_id}/members", data={"add": json.dumps([hamlet_id])}).raise_for_status()
        detail.locator(".group-members", has_text="King Hamlet").wait_for()
        api.patch(f"/user_groups/{new_id}", data={"description": "Read every draft"}).raise_for_status()
        detail.get_by_text("Read every draft").wait_for()
        api.post(f"/user_groups/{new_id}/deactivate").raise_for_status()
        panel.get_by_role("button", name=name).wait_for(state="detached")


def test_linkifiers_are_added_edited_reordered_and_deleted(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago")
    accept_dialogs(page)
    panel = open_section(page, "Linkifiers")
    tag = unique("T").split()[-1]
    first, second = f"ISSUE{tag}-(?P<id>[0-9]+)", f"PR{tag}-(?P<id>[0-9]+)"
    for pattern in (first, second):
        panel.locator("#linkifier-new-pattern").fill(pattern)
        panel.locator("#linkifier-new-url").fill("https://tracker.example.com/{id}")
        panel.get_by_role("button", name="Add linkifier").click()
        panel.locator(".linkifier-row", has_text=pattern).wait_for()

    def order() -> list[str]:
        return [p for p in panel.locator(".linkifier-pattern").all_inner_texts() if tag in p]

    assert order() == [first, second]
    panel.get_by_role("button", name=f"Move {second} up").click()
    wait_for(
        page,
        "(tag) => [...document.querySelectorAll('.linkifier-pattern')].map((e) => e.textContent)"
        ".filter((p) => p.includes(tag))[0].startsWith('PR')",
        tag,
    )
    assert order() == [second, first]
    panel.get_by_role("button", name=f"Edit {first}").click()
    panel.get_by_label("URL template").first.fill("https://bugs.example.com/{id}")
    panel.get_by_role("button", name="Save linkifier").click()
    panel.locator(".linkifier-row", has_text="https://bugs.example.com/{id}").wait_for()
    panel.get_by_role("button", name=f"Delete {second}").click()
    panel.locator(".linkifier-row", has_text=second).wait_for(state="detached")
    with live_server.api("hamlet") as api:
        linkifiers = api.get("/realm/linkifiers").json()["linkifiers"]
    mine = [item for item in linkifiers if tag in item["pattern"]]
    assert mine == [{"id": mine[0]["id"], "pattern": first, "url_template": "https://bugs.example.com/{id}"}]
    panel.get_by_role("button", name=f"Delete {first}").click()
    panel.locator(".linkifier-row", has_text=first).wait_for(state="detached")


def test_members_read_linkifiers_playgrounds_and_default_channels_as_they_change(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("hamlet")
    panel = open_section(page, "Linkifiers")
    panel.get_by_text("Only administrators can change linkifiers.").wait_for()
    assert panel.get_by_role("button", name="Add linkifier").count() == 0
    tag = unique("L").split()[-1]
    with live_server.api("iago") as api:
        made = api.post(
            "/realm/filters",
            data={"pattern": f"LIVE{tag}-(?P<n>[0-9]+)", "url_template": "https://x.example.com/{n}"},
        )
        made.raise_for_status()
        panel.locator(".linkifier-row", has_text=f"LIVE{tag}").wait_for()
        api.delete(f"/realm/filters/{made.json()['id']}").raise_for_status()
        panel.locator(".linkifier-row", has_text=f"LIVE{tag}").wait_for(state="detached")

        page.get_by_role("tab", name="Code playgrounds").click()
        panel.get_by_role("heading", name="Code playgrounds", level=2).wait_for()
        playground = f"Playground {tag}"
        made = api.post(
            "/realm/playgrounds",
            data={
                "name": playground,
                "pygments_language": "Rust",
                "url_template": "https://play.example.com/?c={code}",
            },
        )
        made.raise_for_status()
        panel.locator(".playground-row", has_text=playground).wait_for()
        api.delete(f"/realm/playgrounds/{made.json()['id']}").raise_for_status()
        panel.locator(".playground-row", has_text=playground).wait_for(state="detached")

        page.get_by_role("tab", name="Default channels").click()
        panel.get_by_role("heading", name="Default channels", level=2).wait_for()
        channel = unique("newcomers").replace(" ", "-")
        api.post(
            "/users/me/subscriptions", data={"subscriptions": json.dumps([{"name": channel}])}
        ).raise_for_status()
        stream_id = channel_id(live_server, "iago", channel)
        api.post("/default_streams", data={"stream_id": stream_id}).raise_for_status()
        panel.locator(".default-channel-row", has_text=f"#{channel}").wait_for()
        api.delete("/default_streams", params={"stream_id": stream_id}).raise_for_status()
        panel.locator(".default-channel-row", has_text=f"#{channel}").wait_for(state="detached")


def test_administrators_set_playgrounds_and_default_channels(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago")
    accept_dialogs(page)
    panel = open_section(page, "Code playgrounds")
    name = unique("Go playground")
    panel.get_by_label("Language").fill("Go")
    panel.get_by_label("Name", exact=True).fill(name)
    panel.get_by_label("URL template (with {code})").fill("https://go.example.com/?code={code}")
    panel.get_by_role("button", name="Add playground").click()
    panel.locator(".playground-row", has_text=name).wait_for()
    panel.get_by_role("button", name=f"Delete {name}").click()
    panel.locator(".playground-row", has_text=name).wait_for(state="detached")

    channel = unique("onboarding").replace(" ", "-")
    stream_id = channel_id(live_server, "iago", channel)
    page.get_by_role("tab", name="Default channels").click()
    wait_for(
        page, "(id) => !!document.querySelector(`#default-channel-choice option[value='${id}']`)", stream_id
    )
    panel.get_by_label("Add a default channel").select_option(str(stream_id))
    panel.get_by_role("button", name="Add", exact=True).click()
    panel.locator(".default-channel-row", has_text=f"#{channel}").wait_for()
    assert stream_id in realm_state(live_server, "hamlet", "realm_default_streams")["realm_default_streams"]
    panel.get_by_role("button", name=f"Remove #{channel} from the default channels").click()
    panel.locator(".default-channel-row", has_text=f"#{channel}").wait_for(state="detached")


def test_organization_permissions_are_saved_and_follow_changes_elsewhere(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("desdemona")
    panel = open_section(page, "Organization permissions")
    admins = group_id(live_server, "role:administrators")
    members = group_id(live_server, "role:members")
    moderators = group_id(live_server, "role:moderators")
    before = realm_state(
        live_server,
        "desdemona",
        "realm_can_add_custom_emoji_group",
        "realm_message_content_edit_limit_seconds",
    )
    try:
        panel.get_by_label("Who can add custom emoji").select_option(label="Administrators")
        wait_for(page, "(id) => window.palaver.state.realm.realm_can_add_custom_emoji_group === id", admins)
        assert (
            realm_state(live_server, "hamlet", "realm_can_add_custom_emoji_group")[
                "realm_can_add_custom_emoji_group"
            ]
            == admins
        )
        limit = panel.get_by_label("Time limit for editing messages (minutes)")
        limit.fill("15")
        limit.press("Enter")
        limit.blur()
        wait_for(page, "() => window.palaver.state.realm.realm_message_content_edit_limit_seconds === 900")
        # Changed by another administrator: the open panel shows it.
        with live_server.api("iago") as api:
            api.patch(
                "/realm", data={"can_resolve_topics_group": json.dumps({"new": moderators})}
            ).raise_for_status()
            api.patch("/realm", data={"message_content_edit_limit_seconds": 3600}).raise_for_status()
        wait_for(
            page,
            "(id) => document.getElementById('permission-can_resolve_topics_group').value === String(id)",
            moderators,
        )
        wait_for(
            page,
            "() => document.getElementById('permission-message_content_edit_limit_seconds').value === '60'",
        )
    finally:
        with live_server.api("desdemona") as api:
            api.patch(
                "/realm",
                data={
                    "can_add_custom_emoji_group": json.dumps(
                        {"new": before["realm_can_add_custom_emoji_group"]}
                    ),
                    "can_resolve_topics_group": json.dumps({"new": members}),
                    "message_content_edit_limit_seconds": before["realm_message_content_edit_limit_seconds"]
                    or "unlimited",
                },
            ).raise_for_status()
