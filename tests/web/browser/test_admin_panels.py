"""The organization panels a team from Zulip expects, in a real Chromium: a bot's avatar and
owner, user groups' subgroups and permissions, default channel groups, announcement channels
and message retention. Each is done through the panel by one person while another person's
open panel (at phone width where it matters) follows the change live."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from PIL import Image

from tests.web.browser.client import accept_dialogs, open_section, unique
from tests.web.conftest import LiveServer, close_page, wait_for

AppPage = Callable[..., Any]
PHONE = {"width": 390, "height": 800}


def png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), colour).save(out, "PNG")
    return out.getvalue()


def fits_width(page: Any) -> bool:
    """Nothing in the settings panel sticks out sideways (no horizontal scrolling)."""
    return bool(
        page.evaluate(
            "() => { const p = document.getElementById('settings-panel');"
            " return p.scrollWidth <= p.clientWidth + 1; }"
        )
    )


def register(live_server: LiveServer, name: str, *types: str) -> dict[str, Any]:
    with live_server.api(name) as api:
        response = api.post("/register", data={"fetch_event_types": json.dumps(list(types))})
        response.raise_for_status()
        return dict(response.json())


def test_a_bots_avatar_and_owner_are_changed_and_the_owner_sees_it_live(
    live_server: LiveServer, app_page: AppPage, tmp_path: Any
) -> None:
    name = unique("Deploy bot")
    with live_server.api("hamlet") as api:
        made = api.post("/bots", data={"full_name": name, "short_name": "deploy" + name.split()[-1]})
        made.raise_for_status()
        bot_id = made.json()["user_id"]
    owner = app_page("hamlet", viewport=PHONE)
    owner_panel = open_section(owner, "Bots")
    owner_row = owner_panel.locator(".bot-row", has_text=name)
    owner_row.get_by_text("Generic bot, owned by King Hamlet").wait_for()
    assert fits_width(owner)

    admin = app_page("iago")
    accept_dialogs(admin)
    panel = open_section(admin, "Bots")
    row = panel.locator(".bot-row", has_text=name)
    assert row.get_by_label(f"Owner of {name}").input_value() == str(
        owner.evaluate("window.palaver.state.myId")
    )
    picture = tmp_path / "bot.png"
    picture.write_bytes(png("teal"))
    row.get_by_label(f"Change avatar of {name}").set_input_files(str(picture))
    uploaded = (
        "(id) => { const b = (window.palaver.state.realm.realm_bots || []).find((b) => b.user_id === id);"
        " const u = b && b.avatar_url;"
        " return u && u.includes('/user_avatars/') && !u.includes('/generated/') && u; }"
    )
    url = wait_for(owner, uploaded, bot_id)
    # The owner's open panel shows the new picture, loaded.
    wait_for(
        owner,
        "([id, url]) => { const img = document.querySelector(`.bot-row[data-bot-id='${id}'] img`);"
        " return img && img.src.endsWith(url) && img.naturalWidth > 0; }",
        [bot_id, url],
    )
    wait_for(
        admin,
        "([id, url]) => document.querySelector(`.bot-row[data-bot-id='${id}'] img`)?.src.endsWith(url)",
        [bot_id, url],
    )

    row.get_by_label(f"Owner of {name}").select_option(label="Othello, the Moor of Venice")
    panel.locator(".bot-row", has_text=name).get_by_text(
        "Generic bot, owned by Othello, the Moor of Venice"
    ).wait_for()
    # Hamlet no longer manages it: it leaves his list.
    owner_row.wait_for(state="detached")
    with live_server.api("othello") as api:
        assert bot_id in [b["user_id"] for b in api.get("/bots").json()["bots"]]


def test_a_bot_owner_gives_their_bot_away_at_phone_width(live_server: LiveServer, app_page: AppPage) -> None:
    name = unique("Phone bot")
    with live_server.api("othello") as api:
        api.post(
            "/bots", data={"full_name": name, "short_name": "phone" + name.split()[-1]}
        ).raise_for_status()
    page = app_page("othello", viewport=PHONE)
    accept_dialogs(page)
    panel = open_section(page, "Bots")
    row = panel.locator(".bot-row", has_text=name)
    row.get_by_label(f"Owner of {name}").select_option(label="King Hamlet")
    row.wait_for(state="detached")
    with live_server.api("hamlet") as api:
        assert name in [b["full_name"] for b in api.get("/bots").json()["bots"]]


def test_subgroups_and_group_permissions_are_set_and_a_member_joins_and_leaves(
    live_server: LiveServer, app_page: AppPage
) -> None:
    name = unique("editors")
    inner = unique("proofreaders")
    with live_server.api("iago") as api:
        othello = api.get("/users/othello@example.com").json()["user"]["user_id"]
        made = api.post("/user_groups/create", data={"name": name, "description": "", "members": "[]"})
        made.raise_for_status()
        api.post(
            "/user_groups/create",
            data={"name": inner, "description": "", "members": json.dumps([othello])},
        ).raise_for_status()
    member = app_page("hamlet", viewport=PHONE)
    member_panel = open_section(member, "User groups")
    member_panel.get_by_role("button", name=name).click()
    seen = member_panel.get_by_role("region", name=f"Group {name}")
    seen.get_by_text("No subgroups.").wait_for()
    # Hamlet may not change who can join: he reads it.
    assert seen.get_by_label("Who can join this group").is_disabled()
    assert seen.get_by_role("button", name="Join group").count() == 0

    admin = app_page("iago")
    panel = open_section(admin, "User groups")
    panel.get_by_role("button", name=name).click()
    detail = panel.get_by_role("region", name=f"Group {name}")
    detail.get_by_label("Add a subgroup").select_option(label=inner)
    detail.get_by_role("button", name="Add subgroup").click()
    detail.locator(".group-subgroups", has_text=inner).wait_for()
    seen.locator(".group-subgroups", has_text=inner).wait_for()
    # The group the subgroup is in cannot become its own subgroup's subgroup.
    panel.locator(".group-list").get_by_role("button", name=inner).click()
    inner_detail = panel.get_by_role("region", name=f"Group {inner}")
    options = inner_detail.get_by_label("Add a subgroup").locator("option").all_inner_texts()
    assert name not in options and inner not in options
    panel.locator(".group-list").get_by_role("button", name=name).click()

    detail.get_by_label("Who can join this group").select_option(label="Everyone except guests")
    wait_for(
        member,
        "(name) => { const s = [...document.querySelectorAll('.group-detail select')]"
        ".find((e) => e.id.startsWith('group-can_join_group-'));"
        " return s && s.selectedOptions[0].textContent === 'Everyone except guests'; }",
        name,
    )
    seen.get_by_role("button", name="Join group").click()
    detail.locator(".group-members", has_text="King Hamlet").wait_for()
    assert fits_width(member)
    seen.get_by_role("button", name="Leave group").click()
    detail.locator(".group-members", has_text="King Hamlet").wait_for(state="detached")

    detail.get_by_role("button", name=f"Remove subgroup {inner} from {name}").click()
    seen.get_by_text("No subgroups.").wait_for()
    groups = register(live_server, "iago", "realm_user_groups")["realm_user_groups"]
    group = next(g for g in groups if g["name"] == name)
    assert group["direct_subgroup_ids"] == [] and group["members"] == []
    members_group = next(g for g in groups if g["name"] == "role:members")
    assert group["can_join_group"] == members_group["id"]


def make_channels(live_server: LiveServer, *names: str) -> None:
    with live_server.api("iago") as api:
        subscriptions = json.dumps([{"name": name} for name in names])
        api.post("/users/me/subscriptions", data={"subscriptions": subscriptions}).raise_for_status()


def test_default_channel_groups_are_made_changed_and_deleted_and_members_see_them_live(
    live_server: LiveServer, app_page: AppPage
) -> None:
    tag = unique("x").split()[-1]
    design, research, support = f"design-{tag}", f"research-{tag}", f"support-{tag}"
    make_channels(live_server, design, research, support)
    name = f"Product {tag}"
    member = app_page("hamlet", viewport=PHONE)
    member_panel = open_section(member, "Default channels")
    member_panel.get_by_role("heading", name="Default channel groups").wait_for()
    assert member_panel.get_by_role("button", name="Create group").count() == 0

    admin = app_page("iago")
    accept_dialogs(admin)
    panel = open_section(admin, "Default channels")
    create = panel.locator(".default-group-create")
    create.get_by_label("Group name").fill(name)
    create.get_by_label("Description").fill("What we make")
    create.get_by_label(f"#{design}").check()
    create.get_by_label(f"#{research}").check()
    create.get_by_role("button", name="Create group").click()
    card = panel.get_by_role("region", name=f"Default channel group {name}")
    card.get_by_text(f"#{research}").wait_for()
    seen = member_panel.get_by_role("region", name=f"Default channel group {name}")
    seen.get_by_text(f"#{design}").wait_for()
    seen.get_by_text("What we make").wait_for()
    assert seen.get_by_role("button", name=f"Remove #{design} from {name}").count() == 0
    assert fits_width(member)

    card.get_by_label(f"Add a channel to {name}").select_option(label=f"\u2068#{support}\u2069")
    card.get_by_role("button", name="Add", exact=True).click()
    seen.get_by_text(f"#{support}").wait_for()
    card.get_by_role("button", name=f"Remove #{design} from {name}").click()
    seen.get_by_text(f"#{design}").wait_for(state="detached")

    renamed = f"Products {tag}"
    card.get_by_label("Group name").fill(renamed)
    card.get_by_label("Description").fill("What we make and sell")
    card.get_by_role("button", name="Save group").click()
    renamed_seen = member_panel.get_by_role("region", name=f"Default channel group {renamed}")
    renamed_seen.get_by_text("What we make and sell").wait_for()
    groups = register(live_server, "hamlet", "default_stream_groups")["realm_default_stream_groups"]
    group = next(g for g in groups if g["name"] == renamed)
    with live_server.api("iago") as api:
        ids = {
            api.get("/get_stream_id", params={"stream": c}).json()["stream_id"] for c in (research, support)
        }
    assert set(group["streams"]) == ids and group["description"] == "What we make and sell"

    admin_card = panel.get_by_role("region", name=f"Default channel group {renamed}")
    admin_card.get_by_role("button", name=f"Delete the default channel group {renamed}").click()
    renamed_seen.wait_for(state="detached")
    assert renamed not in [
        g["name"]
        for g in register(live_server, "iago", "default_stream_groups")["realm_default_stream_groups"]
    ]


ANNOUNCEMENT_KEYS = (
    "realm_new_stream_announcements_stream_id",
    "realm_signup_announcements_stream_id",
    "realm_zulip_update_announcements_stream_id",
    "realm_message_retention_days",
)


def test_announcement_channels_and_message_retention_are_set_and_followed_live(
    live_server: LiveServer, app_page: AppPage
) -> None:
    channel = f"archive-{unique('x').split()[-1]}"
    make_channels(live_server, channel)
    before = {key: register(live_server, "desdemona", "realm")[key] for key in ANNOUNCEMENT_KEYS}
    admin = app_page("iago", viewport=PHONE)
    admin_panel = open_section(admin, "Announcements & retention")
    admin_panel.get_by_text("Only organization owners can change message retention.").wait_for()
    assert admin_panel.locator("#retention-realm-policy").is_disabled()
    assert admin_panel.get_by_role("button", name="Save retention").count() == 0
    assert fits_width(admin)

    owner = app_page("desdemona")
    accept_dialogs(owner)
    panel = open_section(owner, "Announcements & retention")
    try:
        panel.get_by_label("New user announcements").select_option(label=f"\u2068#{channel}\u2069")
        wait_for(
            admin,
            "(name) => document.getElementById('announce-signup_announcements_stream_id')"
            ".selectedOptions[0].textContent === '\\u2068#' + name + '\\u2069'",
            channel,
        )
        admin_panel.get_by_label("New channel announcements").select_option(label="Disabled")
        wait_for(
            owner,
            "() => document.getElementById('announce-new_stream_announcements_stream_id').value === '-1'",
        )
        state = register(live_server, "hamlet", "realm")
        assert state["realm_new_stream_announcements_stream_id"] == -1
        with live_server.api("iago") as api:
            channel_id = api.get("/get_stream_id", params={"stream": channel}).json()["stream_id"]
        assert state["realm_signup_announcements_stream_id"] == channel_id

        panel.locator("#retention-realm-policy").select_option(label="Delete messages after a number of days")
        panel.get_by_label("Days to keep messages").first.fill("90")
        panel.locator(".retention-form").first.get_by_role("button", name="Save retention").click()
        wait_for(admin, "() => document.getElementById('retention-realm-days').value === '90'")
        assert register(live_server, "hamlet", "realm")["realm_message_retention_days"] == 90

        panel.get_by_label("Channel", exact=True).select_option(label=f"\u2068#{channel}\u2069")
        panel.locator("#retention-channel-policy").select_option(label="Keep messages forever")
        panel.locator(".retention-form").last.get_by_role("button", name="Save retention").click()
        admin_row = admin_panel.locator(".retention-list li", has_text=f"#{channel}")
        admin_row.get_by_text("Keep messages forever").wait_for()
        panel.get_by_role("button", name=f"Use the organization's retention for {channel}").click()
        admin_row.wait_for(state="detached")
        with live_server.api("iago") as api:
            stream = api.get(f"/streams/{channel_id}").json()["stream"]
        assert stream["message_retention_days"] is None
    finally:
        with live_server.api("desdemona") as api:
            api.patch(
                "/realm",
                data={
                    "new_stream_announcements_stream_id": before["realm_new_stream_announcements_stream_id"],
                    "signup_announcements_stream_id": before["realm_signup_announcements_stream_id"],
                    "zulip_update_announcements_stream_id": before[
                        "realm_zulip_update_announcements_stream_id"
                    ],
                    "message_retention_days": "unlimited"
                    if before["realm_message_retention_days"] == -1
                    else before["realm_message_retention_days"],
                },
            ).raise_for_status()


def test_the_new_panels_read_in_arabic_right_to_left_at_phone_width(
    live_server: LiveServer, app_page: AppPage
) -> None:
    name = unique("Arabic")
    with live_server.api("iago") as api:
        api.post(
            "/bots", data={"full_name": name + " bot", "short_name": "ar" + name.split()[-1]}
        ).raise_for_status()
        api.post(
            "/user_groups/create", data={"name": name, "description": "", "members": "[]"}
        ).raise_for_status()
        api.patch("/settings", data={"default_language": "ar"}).raise_for_status()
    page = None
    try:
        page = app_page("iago", viewport=PHONE)
        assert page.evaluate("document.documentElement.dir") == "rtl"
        page.locator("#settings-button").click()
        headings = {
            "announcements": "الإعلانات والاحتفاظ",
            "default_channels": "مجموعات القنوات الافتراضية",
            "groups": "الأذونات",
            "bots": "المالك",
        }
        for tab, text in headings.items():
            page.locator(f"#settings-tab-{tab}").click()
            page.locator("#settings-panel").get_by_text(text, exact=True).first.wait_for()
            assert fits_width(page), tab
    finally:
        # Closed first: told of the change, the open page would reload itself as it closes.
        if page is not None:
            close_page(page)
        with live_server.api("iago") as api:
            api.patch("/settings", data={"default_language": "en"}).raise_for_status()
