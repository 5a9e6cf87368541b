"""Prometheus Alertmanager: one message per notification, its alerts listed.

The topic is an alert label (``name`` URL parameter, default ``alertname``); each alert is
described by an annotation (``desc`` parameter, default ``description``, then ``summary``).
"""

from __future__ import annotations

from typing import Any

from palaver.webhooks.base import (
    ConfigOption,
    Integration,
    Notification,
    WebhookRequest,
    WebhookResult,
    link,
    plural,
)


def _alert_line(alert: dict[str, Any], desc_key: str) -> str:
    labels = alert.get("labels") or {}
    annotations = alert.get("annotations") or {}
    text = str(
        annotations.get(desc_key)
        or annotations.get("description")
        or annotations.get("summary")
        or labels.get("instance")
        or labels.get("alertname")
        or "alert"
    )
    source = f" ({link('source', alert['generatorURL'])})" if alert.get("generatorURL") else ""
    return f"* {text}{source}"


def handle(request: WebhookRequest) -> WebhookResult:
    payload = request.json_object()
    name_key = request.params.get("name") or "alertname"
    desc_key = request.params.get("desc") or "description"
    status = str(payload["status"])
    alerts: list[dict[str, Any]] = list(payload["alerts"])
    labels = payload.get("commonLabels") or payload.get("groupLabels") or {}
    topic = str(labels.get(name_key) or (alerts[0].get("labels") or {}).get(name_key) or "Alertmanager")
    sections = []
    for state, icon in (("firing", ":rotating_light:"), ("resolved", ":check:")):
        group = [a for a in alerts if (a.get("status") or status) == state]
        if not group:
            continue
        head = f"{icon} **{state.upper()}**: {plural(len(group), 'alert')}"
        if payload.get("externalURL") and state == "firing":
            head += f" ({link('Alertmanager', payload['externalURL'])})"
        sections.append("\n".join([head, *(_alert_line(a, desc_key) for a in group)]))
    # One message per notification: Alertmanager groups alerts so that people get one.
    return WebhookResult(status, [Notification(topic, "\n\n".join(sections))] if sections else [])


INTEGRATION = Integration(
    name="alertmanager",
    display_name="Prometheus Alertmanager",
    handler=handle,
    all_event_types=("firing", "resolved"),
    config_options=(
        ConfigOption("name", "Label whose value is the topic (default alertname)"),
        ConfigOption("desc", "Annotation describing each alert (default description)"),
    ),
    doc="Add a `webhook_configs` receiver with this URL.",
)
