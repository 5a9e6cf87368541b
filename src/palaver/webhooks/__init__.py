"""Incoming-webhook integrations: one module each, listed here by URL name.

``POST /api/v1/external/<name>`` runs ``INTEGRATIONS[name].handler`` (see ``base.py``).
"""

from __future__ import annotations

from palaver.webhooks import (
    alertmanager,
    github,
    gitlab,
    grafana,
    json_generic,
    sentry,
    slack_incoming,
    text,
)
from palaver.webhooks.base import Integration

INTEGRATIONS: dict[str, Integration] = {
    module.INTEGRATION.name: module.INTEGRATION
    for module in (alertmanager, github, gitlab, grafana, json_generic, sentry, slack_incoming, text)
}
