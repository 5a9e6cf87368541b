"""``palaver seed-messages``: fill an organization with many messages, fast, for benchmarks.

Users, channels and conversations are made through the actions (few, and they must be
right); messages and their ``user_message`` rows are written in bulk straight to the
tables (executemany on SQLite, COPY on PostgreSQL), with no events and no Markdown: a
million messages through ``do_send_message`` would take hours. The SQLite search index
is kept by its triggers as rows arrive.
"""

from __future__ import annotations

import html
import itertools
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TextIO

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.orm import Session

from palaver.actions.channel_creation import do_create_channel
from palaver.actions.message_recipients import get_or_create_dm_group
from palaver.actions.new_channels import NewChannel
from palaver.actions.subscriptions import do_add_subscriptions
from palaver.actions.users import do_create_user
from palaver.db.transaction import transaction
from palaver.lib.channels import get_stream_by_name
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import realm_email_host
from palaver.lib.user_groups import direct_system_groups_for, get_system_groups
from palaver.lib.user_settings import setting_specs
from palaver.lib.users import api_email_for
from palaver.models import Realm, RealmUserDefault, Role, UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.groups import UserGroupMembership
from palaver.models.messages import Message, MessageFlag
from palaver.models.requester import Requester
from palaver.services import Services
from palaver.timeutil import utcnow

_SYLLABLES = [
    "ka",
    "ri",
    "to",
    "mo",
    "na",
    "le",
    "su",
    "vi",
    "pe",
    "da",
    "lo",
    "mi",
    "ra",
    "ne",
    "zu",
    "ba",
    "ko",
    "ti",
    "ga",
    "ho",
    "fu",
    "se",
    "ya",
    "wo",
    "chi",
    "shi",
    "ren",
    "tal",
    "mar",
    "quin",
    "dor",
    "vel",
]
# Real words too, so searches for ordinary ones find something.
_COMMON = [
    "the",
    "deploy",
    "server",
    "release",
    "bug",
    "meeting",
    "lunch",
    "review",
    "merge",
    "test",
    "build",
    "design",
    "docs",
    "question",
    "answer",
    "thanks",
    "update",
    "issue",
    "plan",
    "coffee",
    "weekend",
    "castle",
    "ghost",
]


@dataclass(frozen=True)
class SeedPlan:
    messages: int = 1_000_000
    channels: int = 10
    topics_per_channel: int = 20
    subscribers: int = 10
    # Share of messages that are direct messages between two seeded users.
    dm_share: float = 0.1
    batch_size: int = 5_000
    random_seed: int = 1


@dataclass(frozen=True)
class SeedResult:
    messages: int
    user_messages: int
    first_id: int
    last_id: int
    seconds: float


def _vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    words = set(_COMMON)
    while len(words) < size:
        words.add("".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))))
    # Sorted before shuffling so the same seed gives the same words on every Python.
    ordered = sorted(words)
    rng.shuffle(ordered)
    return _COMMON + [w for w in ordered if w not in _COMMON]


class ProgressBar:
    """A plain-text bar on one line of stderr, redrawn at most a few times a second."""

    def __init__(self, total: int, out: TextIO, width: int = 30) -> None:
        self.total, self.out, self.width = total, out, width
        self.started = time.monotonic()
        self._drawn_at = 0.0

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < 0.25:
            return
        self._drawn_at = now
        share = done / self.total if self.total else 1.0
        filled = int(share * self.width)
        rate = done / max(now - self.started, 1e-9)
        self.out.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {share:6.1%} {done}/{self.total}"
            f"  {rate:,.0f} msg/s"
        )
        self.out.flush()

    def finish(self) -> None:
        self.update(self.total, force=True)
        self.out.write("\n")
        self.out.flush()


def _ensure_users(session: Session, services: Services, realm: Realm, count: int) -> list[UserProfile]:
    humans = list(
        session.scalars(
            select(UserProfile)
            .where(UserProfile.realm_id == realm.id, UserProfile.is_active, UserProfile.bot_type.is_(None))
            .order_by(UserProfile.id)
        )
    )
    email_host = realm_email_host(services.settings, realm)
    for index in range(len(humans), count):
        humans.append(
            do_create_user(
                session,
                realm,
                email=f"seed-user-{index}@{email_host}",
                full_name=f"Seed User {index}",
                password_hash=None,
                email_host=email_host,
            )
        )
    return humans[:count]


def _ensure_channels(
    session: Session, creator: UserProfile, users: Sequence[UserProfile], count: int
) -> list[Stream]:
    streams = []
    for index in range(count):
        name = f"seed channel {index}"
        stream = get_stream_by_name(session, creator.realm_id, name)
        if stream is None:
            stream = do_create_channel(session, Requester.of(creator), NewChannel(name=name), users)
        else:
            do_add_subscriptions(session, [stream], users)
        streams.append(stream)
    return streams


def _dm_recipients(
    session: Session, users: Sequence[UserProfile], rng: random.Random
) -> list[tuple[int, list[int]]]:
    """A few two-person conversations: (recipient ID, member IDs)."""
    pairs = list(itertools.combinations([u.id for u in users], 2))
    rng.shuffle(pairs)
    conversations = []
    with transaction(session):
        for pair in pairs[:20]:
            group = get_or_create_dm_group(session, set(pair))
            assert group.recipient_id is not None
            conversations.append((group.recipient_id, list(pair)))
    return conversations


def _seed_times(count: int) -> Iterator[datetime]:
    # Spread over the last year, in ID order, as real history would be.
    end = utcnow()
    start = end - timedelta(days=365)
    step = (end - start) / max(count, 1)
    for index in range(count):
        yield start + step * index


class _Writer:
    """Bulk rows into message and user_message, in the backend's fastest way."""

    MESSAGE_COLUMNS = (
        "id, realm_id, sender_id, recipient_id, subject, content, rendered_content, "
        "rendered_content_version, date_sent, has_attachment, has_image, has_link, "
        "is_channel_message, sending_client"
    )

    def __init__(self, engine: Engine) -> None:
        self.dialect = engine.dialect.name
        # A connection of its own, outside the ORM: the fastest path the driver has.
        self.raw: Any = engine.raw_connection()
        if self.dialect == "sqlite":
            # A crash mid-seed means seeding again; not waiting for each batch to reach the
            # disk is much of the speed.
            self.raw.execute("PRAGMA synchronous = OFF")
            # user_message's indexes and the FTS index outgrow SQLite's default 2 MB page
            # cache within a few hundred thousand messages; past that every batch rereads
            # index pages from the OS and seeding slows by half (226 s for a million).
            self.raw.execute("PRAGMA cache_size = -262144")

    def write(self, messages: list[tuple[Any, ...]], user_messages: list[tuple[int, int, int]]) -> None:
        cursor = self.raw.cursor()
        try:
            if self.dialect == "postgresql":
                with cursor.copy(f"COPY message ({self.MESSAGE_COLUMNS}) FROM STDIN") as copy:
                    for row in messages:
                        copy.write_row(row)
                with cursor.copy("COPY user_message (user_profile_id, message_id, flags) FROM STDIN") as copy:
                    for row in user_messages:
                        copy.write_row(row)
            else:
                # The engine's connections run in autocommit (db/engine.py issues BEGIN itself), so
                # without this every row would be a transaction of its own.
                cursor.execute("BEGIN IMMEDIATE")
                marks = ", ".join("?" * 14)
                cursor.executemany(f"INSERT INTO message ({self.MESSAGE_COLUMNS}) VALUES ({marks})", messages)
                cursor.executemany(
                    "INSERT INTO user_message (user_profile_id, message_id, flags) VALUES (?, ?, ?)",
                    user_messages,
                )
                cursor.execute("COMMIT")
        finally:
            cursor.close()
        self.raw.commit()

    def timestamp(self, value: datetime) -> Any:
        # SQLAlchemy's SQLite DateTime text format; psycopg takes datetimes as they are.
        return value if self.dialect == "postgresql" else value.isoformat(sep=" ", timespec="microseconds")

    def finish(self) -> None:
        cursor = self.raw.cursor()
        try:
            if self.dialect == "postgresql":
                # Explicit IDs bypassed the sequence; later inserts must start after them.
                cursor.execute(
                    "SELECT setval(pg_get_serial_sequence('message', 'id'), (SELECT max(id) FROM message))"
                )
                cursor.execute("ANALYZE message")
                cursor.execute("ANALYZE user_message")
            else:
                cursor.execute("ANALYZE")
        finally:
            cursor.close()
        self.raw.commit()
        self.raw.close()


def seed_messages(
    services: Services, realm_id: int, plan: SeedPlan, *, progress: TextIO | None = sys.stderr
) -> SeedResult:
    started = time.monotonic()
    rng = random.Random(plan.random_seed)
    words = _vocabulary(rng)
    # Zipf-like: a few words are everywhere, most are rare, as in real chat.
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    with services.db.session() as session:
        realm = session.get_one(Realm, realm_id)
        users = _ensure_users(session, services, realm, max(plan.subscribers, 2))
        streams = _ensure_channels(session, users[0], users, plan.channels)
        conversations = _dm_recipients(session, users, rng)
        topics = [f"{rng.choice(words)} {index}" for index in range(plan.topics_per_channel)]
        user_ids = [u.id for u in users]
        channel_recipients = [s.recipient_id for s in streams if s.recipient_id is not None]
        session.commit()

        writer = _Writer(services.db.engine)
        first_id = (session.scalar(select(func.max(Message.id))) or 0) + 1
        session.commit()
        bar = ProgressBar(plan.messages, progress) if progress is not None else None
        # Recent messages stay unread, so unread counts and first_unread mean something.
        unread_from = first_id + int(plan.messages * 0.99)
        read = int(MessageFlag.READ)
        dm_flags = int(MessageFlag.IS_PRIVATE)
        total_user_messages = 0
        messages: list[tuple[Any, ...]] = []
        user_messages: list[tuple[int, int, int]] = []
        for offset, sent in enumerate(_seed_times(plan.messages)):
            message_id = first_id + offset
            content = " ".join(rng.choices(words, cum_weights=weights, k=rng.randint(3, 16)))
            base = read if message_id < unread_from else 0
            if conversations and rng.random() < plan.dm_share:
                recipient_id, members = rng.choice(conversations)
                sender_id, subject, is_channel = rng.choice(members), "", False
                receivers, extra = members, dm_flags
            else:
                recipient_id = rng.choice(channel_recipients)
                sender_id, subject, is_channel = rng.choice(user_ids), rng.choice(topics), True
                receivers, extra = user_ids, 0
            messages.append(
                (
                    message_id,
                    realm.id,
                    sender_id,
                    recipient_id,
                    subject,
                    content,
                    f"<p>{html.escape(content)}</p>",
                    1,
                    writer.timestamp(sent),
                    False,
                    False,
                    False,
                    is_channel,
                    "seed",
                )
            )
            for receiver in receivers:
                flags = extra | (read if receiver == sender_id else base)
                user_messages.append((receiver, message_id, flags))
            if len(messages) >= plan.batch_size:
                total_user_messages += len(user_messages)
                writer.write(messages, user_messages)
                messages, user_messages = [], []
                if bar is not None:
                    bar.update(offset + 1)
        if messages:
            total_user_messages += len(user_messages)
            writer.write(messages, user_messages)
        writer.finish()
        for stream in streams:
            if stream.first_message_id is None and plan.messages:
                stream.first_message_id = session.scalar(
                    select(func.min(Message.id)).where(Message.recipient_id == stream.recipient_id)
                )
        session.commit()
        if bar is not None:
            bar.finish()
    return SeedResult(
        plan.messages, total_user_messages, first_id, first_id + plan.messages - 1, time.monotonic() - started
    )


# ``palaver seed-users``: a large organization for the /register benchmark ----------------


@dataclass(frozen=True)
class UserSeedResult:
    users: int
    channels: int
    subscriptions: int
    seconds: float


def seed_users(
    services: Services,
    realm_id: int,
    *,
    users: int,
    channels: int,
    subscriptions_per_user: int = 10,
    batch_size: int = 2_000,
) -> UserSeedResult:
    """Bring the organization up to ``users`` seeded members and ``channels`` seeded channels.

    Channels go through ``do_create_channel`` (their permission groups must be right) and
    are made before the users, so their creation events reach few recipients. Users,
    their role-group memberships and subscriptions are inserted in bulk with no events:
    ``do_create_user`` tells every existing user about each new one, which is quadratic.
    Each seeded user joins ``subscriptions_per_user`` channels in rotation; the owner who
    runs the benchmark joins every seeded channel.
    """

    started = time.monotonic()
    with services.db.session() as session:
        realm = session.get_one(Realm, realm_id)
        owner = session.scalars(
            select(UserProfile)
            .where(UserProfile.realm_id == realm_id, UserProfile.role == Role.OWNER, UserProfile.is_active)
            .order_by(UserProfile.id)
        ).first()
        if owner is None:
            raise ValueError("the organization has no active owner to create channels")

        streams: list[Stream] = []
        for index in range(channels):
            name = f"seed channel {index}"
            stream = get_stream_by_name(session, realm_id, name)
            if stream is None:
                stream = do_create_channel(session, Requester.of(owner), NewChannel(name=name))
            streams.append(stream)
        session.commit()
        recipient_ids = [s.recipient_id for s in streams if s.recipient_id is not None]

        email_host = realm_email_host(services.settings, realm)
        existing = set(
            session.scalars(
                select(UserProfile.delivery_email).where(
                    UserProfile.realm_id == realm_id, UserProfile.delivery_email.like("seed-user-%")
                )
            )
        )
        defaults = session.get(RealmUserDefault, realm_id)
        settings_values = (
            {name: getattr(defaults, name) for name in setting_specs()} if defaults is not None else {}
        )
        settings_values["default_language"] = realm.default_language
        now = utcnow()
        groups = get_system_groups(session, realm_id)
        full = realm.waiting_period_threshold == 0
        group_ids = [groups[name].id for name in direct_system_groups_for(Role.MEMBER, full)]

        new_ids: list[int] = []
        wanted = [i for i in range(users) if f"seed-user-{i}@{email_host}" not in existing]
        for start in range(0, len(wanted), batch_size):
            rows = [
                {
                    "realm_id": realm_id,
                    "email": f"seed-user-{i}@{email_host}",
                    "delivery_email": f"seed-user-{i}@{email_host}",
                    "full_name": f"Seed User {i}",
                    "role": Role.MEMBER,
                    "date_joined": now,
                    "api_key": generate_api_key(),
                    **settings_values,
                }
                for i in wanted[start : start + batch_size]
            ]
            ids = list(session.scalars(insert(UserProfile).returning(UserProfile.id), rows))
            new_ids += ids
            session.execute(
                insert(UserGroupMembership),
                [{"user_group_id": g, "user_profile_id": u} for u in ids for g in group_ids],
            )
            session.commit()
        # The API email hides the address unless the default visibility is "everyone".
        for user in session.scalars(select(UserProfile).where(UserProfile.id.in_(new_ids[:1]))):
            if api_email_for(email_host, user) != user.email:
                for start in range(0, len(new_ids), batch_size):
                    chunk = new_ids[start : start + batch_size]
                    session.execute(
                        update(UserProfile),
                        [{"id": u, "email": f"user{u}@{email_host}"} for u in chunk],
                    )
                session.commit()

        subscriptions = 0
        if recipient_ids:
            per_user = min(subscriptions_per_user, len(recipient_ids))
            taken = {
                (user_id, recipient_id)
                for user_id, recipient_id in session.execute(
                    select(Subscription.user_profile_id, Subscription.recipient_id).where(
                        Subscription.recipient_id.in_(recipient_ids)
                    )
                )
            }
            pairs = [(owner.id, r) for r in recipient_ids]
            for n, user_id in enumerate(new_ids):
                pairs += [
                    (user_id, recipient_ids[(n * per_user + j) % len(recipient_ids)]) for j in range(per_user)
                ]
            rows_to_add = [
                {"user_profile_id": u, "recipient_id": r}
                for u, r in dict.fromkeys(pairs)
                if (u, r) not in taken
            ]
            for start in range(0, len(rows_to_add), batch_size * 5):
                session.execute(insert(Subscription), rows_to_add[start : start + batch_size * 5])
            session.commit()
            subscriptions = len(rows_to_add)
    return UserSeedResult(len(new_ids), len(streams), subscriptions, time.monotonic() - started)
