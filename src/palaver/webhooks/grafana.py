"""Grafana alerts: the unified-alerting webhook contact point (Grafana 8+), and the legacy
dashboard-alert format (``ruleName``/``state``/``evalMatches``)."""

from __future__ import annotations

from typing import Any

from palaver.webhooks.base import (
    Integration,
    Notification,
    WebhookRequest,
    WebhookResult,
    link,
    quote,
)

_LEGACY_STATES = {
    "alerting": ":rotating_light: **ALERTING**",
    "ok": ":check: **OK**",
    "no_data": "**NO DATA**",
}


def _unified(payload: dict[str, Any]) -> WebhookResult:
    status = str(payload["status"])
    alerts: list[dict[str, Any]] = list(payload.get("alerts") or [])
    labels = payload.get("commonLabels") or {}
    topic = str(labels.get("alertname") or payload.get("title") or "Grafana alerts")
    icon = ":rotating_light:" if status == "firing" else ":check:"
    lines = [f"{icon} **{status.upper()}**: {payload.get('title') or topic}"]
    for alert in alerts:
        annotations = alert.get("annotations") or {}
        alert_labels = alert.get("labels") or {}
        text = str(
            annotations.get("summary") or annotations.get("description") or alert_labels.get("alertname")
        )
        links = [
            link(label, alert.get(key))
            for label, key in (
                ("source", "generatorURL"),
                ("dashboard", "dashboardURL"),
                ("panel", "panelURL"),
            )
            if alert.get(key)
        ]
        value = f" `{alert['valueString']}`" if alert.get("valueString") else ""
        suffix = f" ({', '.join(links)})" if links else ""
        lines.append(f"* [{alert.get('status', status)}] {text}{value}{suffix}")
    return WebhookResult(status, [Notification(topic, "\n".join(lines))])


def _legacy(payload: dict[str, Any]) -> WebhookResult:
    state = str(payload["state"])
    name = str(payload.get("ruleName") or payload.get("title") or "Grafana alert")
    head = f"{_LEGACY_STATES.get(state, f'**{state.upper()}**')}: {link(name, payload.get('ruleUrl'))}"
    parts = [head]
    if payload.get("message"):
        parts.append(quote(str(payload["message"])))
    matches = [f"* {m.get('metric')}: {m.get('value')}" for m in payload.get("evalMatches") or []]
    if matches:
        parts.append("\n".join(matches))
    if payload.get("imageUrl"):
        parts.append(link("graph", payload["imageUrl"]))
    event = "firing" if state == "alerting" else "resolved" if state == "ok" else state
    return WebhookResult(event, [Notification(name, "\n\n".join(parts))])


def handle(request: WebhookRequest) -> WebhookResult:
    payload = request.json_object()
    if "alerts" in payload and "status" in payload:
        return _unified(payload)
    return _legacy(payload)


INTEGRATION = Integration(
    name="grafana",
    display_name="Grafana",
    handler=handle,
    all_event_types=("firing", "resolved", "no_data", "paused", "pending"),
    doc="Create a Webhook contact point with this URL (method POST).",
)
