"""Bots: create, list one's own, edit, regenerate the API key, deactivate."""

from __future__ import annotations

import json

from starlette.datastructures import UploadFile

from palaver.actions.avatars import do_store_avatar
from palaver.actions.bots import BotDefaultsChange, do_create_bot, do_update_bot
from palaver.actions.users import do_deactivate_user, do_regenerate_api_key
from palaver.api.context import Ctx
from palaver.api.multipart import read_upload
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.avatars import MAX_AVATAR_FILE_SIZE_MIB, avatar_images, avatar_url
from palaver.lib.bots import access_bot_by_id, bot_extra_fields, owned_bots
from palaver.lib.outgoing_webhooks import check_service_url
from palaver.lib.realm import realm_email_host
from palaver.lib.storage import make_storage
from palaver.lib.users import get_realm_user
from palaver.models.bots import ServiceInterface
from palaver.models.users import BotType

router = ApiRouter()


def _defaults_change(
    sending: str | None, events_register: str | None, all_public: bool | None
) -> BotDefaultsChange | None:
    if sending is None and events_register is None and all_public is None:
        return None
    return BotDefaultsChange(sending, events_register, all_public)


def json_string_or_bare(value: str) -> str:
    """A URL sent JSON-encoded, as Zulip's web app and server expect (``"https://…"``), or
    bare, as older Palaver clients and zulip-js send it."""
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, str):
            return decoded
    return value


@router.post("/bots")
def create_bot(
    ctx: Ctx,
    full_name: str,
    short_name: str,
    bot_type: int = BotType.GENERIC,
    payload_url: str = "",
    service_name: str | None = None,
    interface_type: int = ServiceInterface.GENERIC,
    default_sending_stream: str | None = None,
    default_events_register_stream: str | None = None,
    default_all_public_streams: bool | None = None,
    config_data: dict[str, str] | None = None,
) -> JsonDict:
    payload_url = json_string_or_bare(payload_url)
    if bot_type == BotType.OUTGOING_WEBHOOK:
        check_service_url(ctx.services.settings.outgoing_webhooks_allow_private, "payload_url", payload_url)
    bot = do_create_bot(
        ctx.session,
        ctx.requester,
        full_name=full_name,
        short_name=short_name,
        bot_type=bot_type,
        email_host=realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id)),
        payload_url=payload_url,
        service_name=service_name,
        interface_type=interface_type,
        defaults=_defaults_change(
            default_sending_stream, default_events_register_stream, default_all_public_streams
        ),
        config_data=config_data,
    )
    extra = bot_extra_fields(ctx.session, bot)
    return {
        "user_id": bot.id,
        "api_key": bot.api_key,
        "avatar_url": avatar_url(bot),
        "default_sending_stream": extra["default_sending_stream"],
        "default_events_register_stream": extra["default_events_register_stream"],
        "default_all_public_streams": extra["default_all_public_streams"],
    }


@router.get("/bots")
def list_bots(ctx: Ctx) -> JsonDict:
    """The active bots the user owns (administrators list every bot through /register)."""
    bots = []
    for bot in owned_bots(ctx.session, ctx.requester):
        extra = bot_extra_fields(ctx.session, bot)
        bots.append(
            {
                "user_id": bot.id,
                "username": bot.email,
                "full_name": bot.full_name,
                "api_key": bot.api_key,
                "avatar_url": avatar_url(bot),
                "bot_type": bot.bot_type,
                "default_sending_stream": extra["default_sending_stream"],
                "default_events_register_stream": extra["default_events_register_stream"],
                "default_all_public_streams": extra["default_all_public_streams"],
            }
        )
    return {"bots": bots}


@router.patch("/bots/{bot_id:int}")
def update_bot(
    ctx: Ctx,
    bot_id: int,
    full_name: str | None = None,
    role: int | None = None,
    bot_owner_id: int | None = None,
    default_sending_stream: str | None = None,
    default_events_register_stream: str | None = None,
    default_all_public_streams: bool | None = None,
    service_payload_url: str | None = None,
    service_interface: int = ServiceInterface.GENERIC,
    config_data: dict[str, str] | None = None,
    file: UploadFile | None = None,
) -> JsonDict:
    """``file`` (multipart, any field name, as Zulip's web app sends it) becomes the bot's
    uploaded avatar."""
    bot = access_bot_by_id(ctx.session, ctx.requester, bot_id)
    # Read and decoded before anything changes: an oversized or unreadable picture
    # changes nothing, not even the name sent with it.
    images = avatar_images(read_upload(file, MAX_AVATAR_FILE_SIZE_MIB)) if file is not None else None
    if service_payload_url is not None:
        service_payload_url = json_string_or_bare(service_payload_url)
        allow_private = ctx.services.settings.outgoing_webhooks_allow_private
        check_service_url(allow_private, "service_payload_url", service_payload_url)
    do_update_bot(
        ctx.session,
        ctx.requester,
        bot,
        full_name=full_name,
        role=role,
        bot_owner_id=bot_owner_id,
        defaults=_defaults_change(
            default_sending_stream, default_events_register_stream, default_all_public_streams
        ),
        service_payload_url=service_payload_url,
        service_interface=service_interface,
        config_data=config_data,
    )
    if images is not None:
        do_store_avatar(ctx.session, make_storage(ctx.services.settings), bot, images)
    extra = bot_extra_fields(ctx.session, bot)
    result: JsonDict = {
        "full_name": bot.full_name,
        "avatar_url": avatar_url(bot),
        "service_interface": service_interface,
        "service_payload_url": service_payload_url,
        "default_sending_stream": extra["default_sending_stream"],
        "default_events_register_stream": extra["default_events_register_stream"],
        "default_all_public_streams": extra["default_all_public_streams"],
    }
    # Bots without an owner (made from the command line) leave the field out.
    owner = get_realm_user(ctx.session, bot.realm_id, bot.bot_owner_id) if bot.bot_owner_id else None
    if owner is not None:
        result["bot_owner"] = owner.email
    return result


@router.post("/bots/{bot_id:int}/api_key/regenerate")
def regenerate_bot_api_key(ctx: Ctx, bot_id: int) -> JsonDict:
    bot = access_bot_by_id(ctx.session, ctx.requester, bot_id)
    return {"api_key": do_regenerate_api_key(ctx.session, bot)}


@router.delete("/bots/{bot_id:int}")
def deactivate_bot(ctx: Ctx, bot_id: int) -> JsonDict:
    bot = access_bot_by_id(ctx.session, ctx.requester, bot_id)
    do_deactivate_user(ctx.session, bot, acting_user=ctx.requester)
    return {}
