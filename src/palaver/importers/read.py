"""Which reader reads which source."""

from __future__ import annotations

from palaver.importers.bundle import Bundle
from palaver.importers.fetch import Downloader
from palaver.importers.mattermost import read_mattermost
from palaver.importers.model import ImportInputError, ImportSource
from palaver.importers.rocketchat import read_rocketchat
from palaver.importers.slack import read_slack
from palaver.importers.zulip import read_zulip


def read_export(
    source: str, bundle: Bundle, downloader: Downloader, *, team: str | None = None
) -> ImportSource:
    if source == "slack":
        return read_slack(bundle, downloader)
    if source == "zulip":
        return read_zulip(bundle)
    if source == "rocketchat":
        return read_rocketchat(bundle)
    if source == "mattermost":
        return read_mattermost(bundle, team)
    raise ImportInputError(f"unknown source {source!r}")
