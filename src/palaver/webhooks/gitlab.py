"""GitLab: pushes, tag pushes, merge requests, issues and pipelines (``X-Gitlab-Event``)."""

from __future__ import annotations

from typing import Any

from palaver.webhooks.base import (
    ConfigOption,
    Integration,
    MalformedPayloadError,
    Notification,
    UnsupportedEventError,
    WebhookRequest,
    WebhookResult,
    first_line,
    link,
    plural,
    quote,
)

EVENT_TYPES = ("push", "tag_push", "merge_request", "issue", "pipeline")
_HEADER_EVENTS = {
    "Push Hook": "push",
    "Tag Push Hook": "tag_push",
    "Merge Request Hook": "merge_request",
    "Issue Hook": "issue",
    "Confidential Issue Hook": "issue",
    "Pipeline Hook": "pipeline",
}
MAX_COMMITS = 20


def _project(payload: dict[str, Any]) -> str:
    project = payload.get("project") or {}
    return str(project.get("name") or (payload.get("repository") or {}).get("name") or "GitLab")


def _user(payload: dict[str, Any]) -> str:
    user = payload.get("user") or {}
    return str(payload.get("user_name") or user.get("name") or user.get("username") or "Someone")


def _push(payload: dict[str, Any], request: WebhookRequest) -> Notification | None:
    branch = str(payload["ref"]).removeprefix("refs/heads/")
    wanted = [b.strip() for b in request.params.get("branches", "").split(",") if b.strip()]
    if wanted and branch not in wanted:
        return None
    topic = f"{_project(payload)} / {branch}"
    user = _user(payload)
    if set(str(payload.get("after", ""))) == {"0"}:
        return Notification(topic, f"{user} deleted branch {branch}.")
    commits: list[dict[str, Any]] = list(payload.get("commits") or [])
    total = int(payload.get("total_commits_count") or len(commits))
    if set(str(payload.get("before", ""))) == {"0"} and not commits:
        return Notification(topic, f"{user} created branch {branch}.")
    lines = [
        f"* {first_line(c.get('title') or c.get('message'))} ({link(str(c['id'])[:7], c.get('url'))})"
        for c in commits[:MAX_COMMITS]
    ]
    if total > len(lines):
        lines.append(f"[and {total - len(lines)} more commit(s)]")
    head = f"{user} pushed {plural(total, 'commit')} to branch {branch}."
    return Notification(topic, "\n\n".join([head, "\n".join(lines)]))


def _tag_push(payload: dict[str, Any]) -> Notification:
    tag = str(payload["ref"]).removeprefix("refs/tags/")
    verb = "deleted" if set(str(payload.get("after", ""))) == {"0"} else "pushed"
    return Notification(_project(payload), f"{_user(payload)} {verb} tag {tag}.")


_MR_VERBS = {
    "open": "opened",
    "close": "closed",
    "reopen": "reopened",
    "update": "updated",
    "merge": "merged",
    "approved": "approved",
    "unapproved": "unapproved",
    "approval": "approved",
    "unapproval": "unapproved",
}


def _merge_request(payload: dict[str, Any]) -> Notification | None:
    mr = payload["object_attributes"]
    verb = _MR_VERBS.get(str(mr.get("action") or ""))
    if verb is None:
        return None
    iid, title = mr["iid"], str(mr["title"])
    topic = f"{_project(payload)} / MR #{iid} {title}"
    ref = link(f"MR #{iid}", mr.get("url"))
    user = _user(payload)
    if verb == "opened":
        head = f"{user} opened {ref} from `{mr['source_branch']}` to `{mr['target_branch']}`"
        body = str(mr.get("description") or "").strip()
        return Notification(topic, f"{head}:\n\n{quote(body)}" if body else head + ".")
    return Notification(topic, f"{user} {verb} {ref}.")


def _issue(payload: dict[str, Any]) -> Notification | None:
    issue = payload["object_attributes"]
    verb = _MR_VERBS.get(str(issue.get("action") or ""))
    if verb is None:
        return None
    iid, title = issue["iid"], str(issue["title"])
    topic = f"{_project(payload)} / issue #{iid} {title}"
    ref = link(f"issue #{iid}", issue.get("url"))
    user = _user(payload)
    body = str(issue.get("description") or "").strip()
    if verb == "opened" and body:
        return Notification(topic, f"{user} opened {ref}:\n\n{quote(body)}")
    return Notification(topic, f"{user} {verb} {ref}.")


_PIPELINE_STATES = {
    "success": "succeeded",
    "failed": "failed",
    "canceled": "was canceled",
    "skipped": "was skipped",
    "running": "is running",
    "pending": "is pending",
    "created": "was created",
    "manual": "is waiting for a manual action",
}


def _pipeline(payload: dict[str, Any]) -> Notification:
    pipeline = payload["object_attributes"]
    status = str(pipeline["status"])
    project = payload.get("project") or {}
    url = pipeline.get("url") or (
        f"{project['web_url']}/-/pipelines/{pipeline['id']}" if project.get("web_url") else None
    )
    name = link(f"Pipeline #{pipeline['id']}", url)
    sha = str(pipeline.get("sha", ""))[:7]
    outcome = _PIPELINE_STATES.get(status, status)
    text = f"{name} on branch {pipeline.get('ref')} (`{sha}`) **{outcome}**."
    failed = [b for b in payload.get("builds") or [] if b.get("status") == "failed"]
    if failed:
        text += "\n\nFailed jobs:\n" + "\n".join(f"* {b.get('stage')}: {b.get('name')}" for b in failed)
    return Notification(_project(payload), text)


def handle(request: WebhookRequest) -> WebhookResult:
    header = request.header("X-Gitlab-Event")
    if not header:
        raise MalformedPayloadError("Missing the X-Gitlab-Event header")
    event = _HEADER_EVENTS.get(header)
    if event is None:
        raise UnsupportedEventError("GitLab", header)
    payload = request.json_object()
    notification: Notification | None
    if event == "push":
        notification = _push(payload, request)
    elif event == "tag_push":
        notification = _tag_push(payload)
    elif event == "merge_request":
        notification = _merge_request(payload)
    elif event == "issue":
        notification = _issue(payload)
    else:
        notification = _pipeline(payload)
    return WebhookResult(event, [notification] if notification is not None else [])


INTEGRATION = Integration(
    name="gitlab",
    display_name="GitLab",
    handler=handle,
    all_event_types=EVENT_TYPES,
    config_options=(ConfigOption("branches", "Only pushes to these branches (comma-separated)"),),
    doc="GitLab names the event in `X-Gitlab-Event` (Push Hook, Merge Request Hook, ...).",
)
