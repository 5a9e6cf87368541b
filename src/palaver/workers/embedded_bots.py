"""Running an embedded bot: a ``zulip_bots`` handler with a bot handler backed by actions.

The handler API (``send_message``, ``send_reply``, ``update_message``, ``react``, ``storage``,
``get_config_info``, ``identity``, ``quit``) is what ``zulip_bots.lib.AbstractBotHandler``
describes; here every call is a server action done as the bot, in its own transaction, so
what a bot sends is checked and announced like anything a user sends.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.orm import Session

from palaver.actions.bot_storage import do_remove_bot_storage, do_set_bot_storage
from palaver.actions.message_edit import do_update_message
from palaver.actions.message_edit_plan import EditContext, MessageEdit
from palaver.actions.reactions import do_add_reaction
from palaver.actions.service_bots import do_send_bot_message, reply_target
from palaver.config import Settings
from palaver.lib.bot_storage import get_storage
from palaver.lib.bots import get_bot_services
from palaver.lib.embedded_bots import bot_config, load_handler, strip_leading_mention
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import ChannelTarget, DirectTarget, SendTarget
from palaver.lib.outgoing_webhooks import outgoing_message
from palaver.lib.realm import realm_email_host, realm_url
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.models.users import UserProfile


class EmbeddedBotQuitError(Exception):
    pass


class _Identity:
    def __init__(self, name: str, email: str) -> None:
        self.name = name
        self.email = email
        self.mention = f"@**{name}**"


class BotStorage:
    """The bot's storage (the same as /bot_storage), values marshalled as JSON."""

    def __init__(self, session: Session, bot: UserProfile) -> None:
        self._session = session
        self._bot = bot

    def put(self, key: str, value: Any) -> None:
        do_set_bot_storage(self._session, Requester.of(self._bot), {key: orjson.dumps(value).decode()})

    def get(self, key: str) -> Any:
        try:
            raw = get_storage(self._session, self._bot.id, [key])[key]
        except JsonableError:
            raise KeyError(key) from None
        return orjson.loads(raw)

    def contains(self, key: str) -> bool:
        try:
            get_storage(self._session, self._bot.id, [key])
        except JsonableError:
            return False
        return True

    def remove(self, key: str) -> None:
        do_remove_bot_storage(self._session, Requester.of(self._bot), [key])


class PalaverBotHandler:
    def __init__(self, session: Session, settings: Settings, bot: UserProfile) -> None:
        self._session = session
        self._settings = settings
        self._bot = bot
        self.user_id = bot.id
        self.email = bot.email
        self.full_name = bot.full_name
        self._storage = BotStorage(session, bot)

    @property
    def storage(self) -> BotStorage:
        return self._storage

    def identity(self) -> _Identity:
        return _Identity(self.full_name, self.email)

    def _send(self, target: SendTarget, content: str) -> dict[str, Any]:
        message_id = do_send_bot_message(self._session, self._settings, self._bot, target, content)
        return {"id": message_id, "result": "success", "msg": ""}

    def send_message(self, message: dict[str, Any]) -> dict[str, Any]:
        to = message.get("to")
        content = str(message.get("content", ""))
        if message.get("type") in ("stream", "channel"):
            topic = str(message.get("topic", message.get("subject", "")))
            if isinstance(to, int):
                return self._send(ChannelTarget(topic=topic, stream_id=to), content)
            return self._send(ChannelTarget(topic=topic, stream_name=str(to)), content)
        recipients = [to] if isinstance(to, str | int) else list(to or [])
        emails = tuple(str(r) for r in recipients if not isinstance(r, int))
        ids = tuple(r for r in recipients if isinstance(r, int))
        if not emails and not ids:
            raise JsonableError("Message must have recipients!")
        return self._send(DirectTarget(user_ids=ids, emails=emails), content)

    def send_reply(
        self, message: dict[str, Any], response: str, widget_content: str | None = None
    ) -> dict[str, Any] | None:
        original = self._session.get(Message, int(message["id"]))
        if original is None:
            return None
        return self._send(reply_target(self._session, self._bot, original), response)

    def update_message(self, message: dict[str, Any]) -> dict[str, Any]:
        realm = self._bot.realm
        context = EditContext(
            realm_url=realm_url(self._settings, realm), email_host=realm_email_host(self._settings, realm)
        )
        try:
            do_update_message(
                self._session,
                Requester.of(self._bot),
                int(message["message_id"]),
                MessageEdit(content=str(message["content"])),
                context,
            )
        except JsonableError as e:
            self._session.rollback()
            return {"result": "error", "msg": e.msg}
        return {"result": "success", "msg": ""}

    def react(self, message: dict[str, Any], emoji_name: str) -> dict[str, Any]:
        try:
            do_add_reaction(self._session, Requester.of(self._bot), int(message["id"]), emoji_name)
        except JsonableError as e:
            self._session.rollback()
            return {"result": "error", "msg": e.msg}
        return {"result": "success", "msg": ""}

    def get_config_info(self, bot_name: str, optional: bool = False) -> dict[str, str]:
        return bot_config(self._session, self._bot.id)

    def quit(self, message: str = "") -> None:
        raise EmbeddedBotQuitError(message or "The bot quit.")


def run_embedded_bot(
    session: Session, settings: Settings, bot: UserProfile, message: Message, trigger: str
) -> None:
    """Hand the message to the bot's handler (raises whatever the bot raises)."""
    services = get_bot_services(session, bot.id)
    if not services:
        return
    handler = load_handler(services[0].name)
    bot_handler = PalaverBotHandler(session, settings, bot)
    data = outgoing_message(session, message)
    if trigger == "mention":
        data["content"] = strip_leading_mention(str(data["content"]), bot.id, bot.full_name)
    session.rollback()
    if hasattr(handler, "initialize"):
        handler.initialize(bot_handler)
    handler.handle_message(message=data, bot_handler=bot_handler)
