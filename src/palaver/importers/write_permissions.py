"""Permission settings an import carries: user groups with their settings, and the
organization's and channels' group settings, each set as an edit of it is checked (what
names a group or user not imported is counted, and Palaver's default stays)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Container

from palaver.actions.group_settings import set_group_setting
from palaver.actions.realm_settings import do_update_realm_settings
from palaver.actions.user_groups import (
    NewUserGroup,
    UserGroupChanges,
    do_create_user_group,
    do_update_user_group,
)
from palaver.importers.model import ImportedGroup, ImportedGroupSetting
from palaver.importers.write_context import WriteContext
from palaver.lib.channels import STREAM_GROUP_RULES
from palaver.lib.group_settings import (
    AnonymousGroupValue,
    GroupSettingUpdate,
    GroupSettingValue,
    parse_group_setting_value,
)
from palaver.lib.user_groups import get_system_groups
from palaver.models.channels import Stream
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.models.realm import REALM_GROUP_SETTINGS
from palaver.models.requester import Requester


def add_groups(ctx: WriteContext) -> None:
    ctx.group_ids = {name: g.id for name, g in get_system_groups(ctx.session, ctx.realm.id).items()}
    created: list[tuple[ImportedGroup, int]] = []
    for spec in ctx.source.groups:
        members = sorted({ctx.user_ids[k] for k in spec.members if k in ctx.user_ids})
        subgroups = sorted({ctx.group_ids[n] for n in spec.subgroups if n in ctx.group_ids})
        new = NewUserGroup(name=spec.name, description=spec.description, members=members, subgroups=subgroups)
        group = ctx.attempt(
            "user group",
            spec.name,
            functools.partial(do_create_user_group, ctx.session, Requester.of(ctx.owner), new),
        )
        if group is not None:
            ctx.group_ids[spec.name] = group.id
            created.append((spec, group.id))
            ctx.summary.groups += 1
    # A group's settings may name any group, so they wait until every group exists.
    acting = Requester.of(ctx.owner)
    for spec, group_id in created:
        _add_group_settings(
            ctx,
            spec.group_settings,
            GROUP_PERMISSION_SETTINGS,
            "user group",
            spec.name,
            functools.partial(_update_group, ctx, acting, group_id),
        )


def _update_group(
    ctx: WriteContext, acting: Requester, group_id: int, setting: str, value: GroupSettingValue
) -> bool:
    changes = UserGroupChanges(group_settings={setting: GroupSettingUpdate(new=value)})
    do_update_user_group(ctx.session, acting, group_id, changes)
    return True


def _add_group_settings(
    ctx: WriteContext,
    settings: dict[str, ImportedGroupSetting],
    known: Container[str],
    what: str,
    owner: str | None,
    setter: Callable[[str, GroupSettingValue], bool],
) -> None:
    """Set each of one organization's, channel's or group's permission settings (``what``
    names which, ``owner`` the channel or group) that Palaver has (``known``), each as an
    edit of it is checked: one Palaver lacks, one naming what was not imported or one
    the setting refuses is counted, and the default stays."""
    for setting, wanted in sorted(settings.items()):
        location = setting if owner is None else f"{owner}: {setting}"
        if setting not in known:
            ctx.report.skip(f"{what} permission setting Palaver does not have", location)
            continue
        value = _group_setting_value(ctx, wanted, what, location)
        if value is not None and ctx.attempt(
            f"{what} permission setting", location, functools.partial(setter, setting, value)
        ):
            ctx.summary.group_settings += 1


def _group_setting_value(
    ctx: WriteContext, spec: ImportedGroupSetting, what: str, location: str
) -> GroupSettingValue | None:
    """The setting's value by the new IDs, or None (counted) when it names a group or
    user not imported: Palaver's default applies then."""
    if spec.group is not None:
        group_id = ctx.group_ids.get(spec.group)
        if group_id is None:
            ctx.report.skip(
                f"{what} permission setting naming a user group not imported (Palaver's default applies)",
                location,
            )
        return group_id
    missing = [k for k in spec.members if k not in ctx.user_ids]
    missing += [name for name in spec.subgroups if name not in ctx.group_ids]
    if missing:
        ctx.report.skip(
            f"{what} permission setting naming a user or group not imported (Palaver's default applies)",
            location,
        )
        return None
    # A deactivated user holds no permission, and a setting's group keeps none.
    return AnonymousGroupValue(
        direct_members=sorted({ctx.user_ids[k] for k in spec.members if k in ctx.active_keys}),
        direct_subgroups=sorted({ctx.group_ids[name] for name in spec.subgroups}),
    )


def add_channel_group_settings(ctx: WriteContext) -> None:
    for spec in ctx.source.channels:
        stream_id = ctx.stream_ids.get(spec.key)
        if stream_id is None or not spec.group_settings:
            continue
        stream = ctx.session.get(Stream, stream_id)
        assert stream is not None
        _add_group_settings(
            ctx,
            spec.group_settings,
            STREAM_GROUP_RULES,
            "channel",
            spec.name,
            functools.partial(_set_channel_setting, ctx, stream),
        )


def _set_channel_setting(ctx: WriteContext, stream: Stream, setting: str, value: GroupSettingValue) -> bool:
    rule = STREAM_GROUP_RULES[setting]
    resolved = parse_group_setting_value(ctx.session, ctx.realm.id, setting, value, rule)
    set_group_setting(ctx.session, stream, setting, resolved, ctx.realm.id)
    return True


def add_realm_group_settings(ctx: WriteContext) -> None:
    _add_group_settings(
        ctx,
        ctx.source.realm_group_settings,
        REALM_GROUP_SETTINGS,
        "organization",
        None,
        functools.partial(_update_realm_setting, ctx, Requester.of(ctx.owner)),
    )


def _update_realm_setting(
    ctx: WriteContext, acting: Requester, setting: str, value: GroupSettingValue
) -> bool:
    do_update_realm_settings(ctx.session, acting, {}, {setting: GroupSettingUpdate(new=value)})
    return True
