"""This server's registration with Zulip's mobile push notification service.

One row of ``push_service_server`` once an operator ran ``palaver push-register``: the
server's UUID and secret key (HTTP basic credentials of every request to the service, so
they live with the other secrets, in the database, and are never shown by the API), the
hostname and contact email the service holds, and when the operator accepted its terms.
Each organization gets a ``push_service_realm`` row the first time it is reported to the
service: the service knows organizations by that UUID, never by this server's realm ID.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class PushServiceServer(Base):
    __tablename__ = "push_service_server"

    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(String(255))
    server_uuid: Mapped[str] = mapped_column(String(36))
    server_key: Mapped[str] = mapped_column(String(64))
    hostname: Mapped[str] = mapped_column(String(255))
    contact_email: Mapped[str] = mapped_column(String(254))
    terms_accepted_at: Mapped[datetime]
    registered_at: Mapped[datetime] = mapped_column(default=utcnow)


class PushServiceRealm(Base):
    __tablename__ = "push_service_realm"

    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    # Proves ownership of the organization to the service's billing pages.
    uuid_owner_secret: Mapped[str] = mapped_column(String(64))
    # The service's last word on this organization (None: not asked yet).
    can_push: Mapped[bool | None] = mapped_column(default=None)
    expected_end_timestamp: Mapped[int | None] = mapped_column(default=None)
    last_synced: Mapped[datetime | None] = mapped_column(default=None)
