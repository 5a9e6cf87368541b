"""Sentry: internal-integration webhooks (``Sentry-Hook-Resource``: issue, event_alert,
metric_alert, error) and the legacy per-project webhook plugin (no header)."""

from __future__ import annotations

from typing import Any

from palaver.webhooks.base import (
    Integration,
    Notification,
    UnsupportedEventError,
    WebhookRequest,
    WebhookResult,
    link,
)

EVENT_TYPES = ("issue", "event_alert", "metric_alert", "error", "installation")


def _event_text(event: dict[str, Any], headline: str) -> Notification:
    title = str(event.get("title") or event.get("message") or "Sentry event")
    url = event.get("web_url") or event.get("issue_url") or event.get("url")
    lines = [f"{headline} {link(title, url)}"]
    level = event.get("level")
    culprit = event.get("culprit") or event.get("location")
    if level:
        lines.append(f"**Level:** {level}")
    if culprit:
        lines.append(f"**Culprit:** `{culprit}`")
    return Notification(title, "\n".join(lines))


def _issue(payload: dict[str, Any]) -> Notification:
    issue = payload["data"]["issue"]
    action = str(payload["action"])
    title = str(issue["title"])
    url = issue.get("web_url") or issue.get("permalink")
    ref = link(str(issue.get("shortId") or f"issue {issue.get('id')}"), url)
    if action == "assigned":
        assignee = (issue.get("assignedTo") or {}).get("name") or "someone"
        text = f"{ref} was assigned to {assignee}."
    elif action == "created":
        text = f":bug: New issue {ref}: **{title}**"
        if issue.get("level"):
            text += f"\n**Level:** {issue['level']}"
        if issue.get("culprit"):
            text += f"\n**Culprit:** `{issue['culprit']}`"
    else:
        text = f"{ref} was {action}."
    return Notification(title, text)


def _metric_alert(payload: dict[str, Any]) -> Notification:
    data = payload["data"]
    action = str(payload["action"])
    title = str(
        data.get("description_title") or (data.get("metric_alert") or {}).get("title") or "Metric alert"
    )
    icon = ":check:" if action == "resolved" else ":rotating_light:"
    text = f"{icon} **{action.upper()}**: {link(title, data.get('web_url'))}"
    if data.get("description_text"):
        text += f"\n{data['description_text']}"
    return Notification(title, text)


def handle(request: WebhookRequest) -> WebhookResult:
    payload = request.json_object()
    resource = request.header("Sentry-Hook-Resource")
    if resource is None:
        # The legacy webhook plugin: one event, its fields at the top level.
        event = dict(payload.get("event") or {})
        event.setdefault("title", payload.get("message") or payload.get("culprit"))
        event.setdefault("web_url", payload.get("url"))
        event.setdefault("level", payload.get("level"))
        event.setdefault("culprit", payload.get("culprit"))
        project = payload.get("project_name") or payload.get("project")
        note = _event_text(event, f":bug: New event in {project}:" if project else ":bug: New event:")
        return WebhookResult("event_alert", [note])
    if resource == "installation":
        return WebhookResult(resource, [])
    if resource == "issue":
        return WebhookResult(resource, [_issue(payload)])
    if resource == "event_alert":
        data = payload["data"]
        rule = data.get("triggered_rule")
        headline = f":rotating_light: Alert rule *{rule}* fired:" if rule else ":rotating_light: Alert fired:"
        return WebhookResult(resource, [_event_text(data["event"], headline)])
    if resource == "error":
        return WebhookResult(resource, [_event_text(payload["data"]["error"], ":bug: New error:")])
    if resource == "metric_alert":
        return WebhookResult(resource, [_metric_alert(payload)])
    raise UnsupportedEventError("Sentry", resource)


INTEGRATION = Integration(
    name="sentry",
    display_name="Sentry",
    handler=handle,
    all_event_types=EVENT_TYPES,
    doc="Use an internal integration's webhook URL, or the legacy WebHooks plugin.",
)
