"""Changes committed by processes that cannot reach the serving process's event queues.

Without Redis the event queues and the realm-state cache live in the one serving process.
A one-off command (``palaver deactivate-user``, an import, the email gateway) commits its
change in the same transaction as a row here: what the serving process must drop from its
cache and the events it must deliver. The serving process follows the table
(``cache/change_log.py``). IDs are never reused (old rows are deleted), so a follower's
position stays meaningful.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.timeutil import utcnow


class ChangeLogEntry(Base):
    __tablename__ = "change_log"
    __table_args__ = (NEVER_REUSED_IDS,)

    id: Mapped[int] = mapped_column(primary_key=True)
    # JSON: {"realms": [IDs] or null (every realm), "written": [tables and table.columns],
    # "events": [[realm_id, event, [user IDs]], ...]}.
    payload: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(default=utcnow)
