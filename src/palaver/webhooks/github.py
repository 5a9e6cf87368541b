"""GitHub: the event named by the ``X-GitHub-Event`` header, the payload GitHub documents.

Topics follow the repository: ``repo / branch`` for pushes, ``repo / PR #n title`` and
``repo / issue #n title`` for conversations, the repository alone otherwise. The
``branches`` URL parameter (comma-separated) limits pushes to those branches.
"""

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

NAME = "github"
EVENT_TYPES = ("ping", "push", "pull_request", "issues", "issue_comment", "release", "workflow_run")
# Commits listed in a push message; the rest are counted.
MAX_COMMITS = 20


def _user(payload: dict[str, Any]) -> str:
    sender = payload.get("sender") or {}
    return str(sender.get("login") or "Someone")


def _repo(payload: dict[str, Any]) -> str:
    return str(payload["repository"]["name"])


def _ping(payload: dict[str, Any]) -> Notification:
    repo = payload.get("repository")
    topic = str(repo["name"]) if repo else "GitHub"
    return Notification(topic, f"GitHub webhook has been successfully configured by {_user(payload)}.")


def _commit_lines(commits: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"* {first_line(c.get('message'))} ({link(str(c['id'])[:7], c.get('url'))})"
        for c in commits[:MAX_COMMITS]
    ]
    if len(commits) > MAX_COMMITS:
        lines.append(f"[and {len(commits) - MAX_COMMITS} more commit(s)]")
    return lines


def _push(payload: dict[str, Any], request: WebhookRequest) -> Notification | None:
    ref = str(payload["ref"])
    pusher = str((payload.get("pusher") or {}).get("name") or _user(payload))
    repo = _repo(payload)
    if ref.startswith("refs/tags/"):
        tag = ref.removeprefix("refs/tags/")
        verb = "deleted" if payload.get("deleted") else "pushed"
        return Notification(repo, f"{pusher} {verb} tag {link(tag, payload.get('compare'))}.")
    branch = ref.removeprefix("refs/heads/")
    wanted = [b.strip() for b in request.params.get("branches", "").split(",") if b.strip()]
    if wanted and branch not in wanted:
        return None
    topic = f"{repo} / {branch}"
    if payload.get("deleted"):
        return Notification(topic, f"{pusher} deleted branch {branch}.")
    commits: list[dict[str, Any]] = list(payload.get("commits") or [])
    if payload.get("created") and not commits:
        return Notification(topic, f"{pusher} created branch {branch}.")
    verb = "force-pushed" if payload.get("forced") else "pushed"
    action = link(verb, payload.get("compare"))
    head = f"{pusher} {action} {plural(len(commits), 'commit')} to branch {branch}."
    return Notification(topic, "\n\n".join([head, "\n".join(_commit_lines(commits))]))


def _pull_request(payload: dict[str, Any]) -> Notification | None:
    pr = payload["pull_request"]
    action = str(payload["action"])
    number, title = pr["number"], str(pr["title"])
    topic = f"{_repo(payload)} / PR #{number} {title}"
    ref = link(f"PR #{number}", pr.get("html_url"))
    user = _user(payload)
    if action == "opened":
        head = f"{user} opened {ref} from `{pr['head']['ref']}` to `{pr['base']['ref']}`:"
        body = str(pr.get("body") or "").strip()
        return Notification(topic, f"{head}\n\n{quote(body)}" if body else head.rstrip(":") + ".")
    if action == "closed":
        return Notification(topic, f"{user} {'merged' if pr.get('merged') else 'closed'} {ref}.")
    if action == "synchronize":
        return Notification(topic, f"{user} updated {ref}.")
    if action in ("assigned", "unassigned"):
        assignee = (payload.get("assignee") or {}).get("login", "someone")
        word = "to" if action == "assigned" else "from"
        return Notification(topic, f"{user} {action} {assignee} {word} {ref}.")
    if action == "review_requested":
        reviewer = (payload.get("requested_reviewer") or {}).get("login", "someone")
        return Notification(topic, f"{user} requested {reviewer} to review {ref}.")
    if action == "ready_for_review":
        return Notification(topic, f"{user} marked {ref} as ready for review.")
    if action in ("reopened", "edited", "converted_to_draft", "labeled", "unlabeled", "locked", "unlocked"):
        return Notification(topic, f"{user} {action.replace('_', ' ')} {ref}.")
    return None


def _issues(payload: dict[str, Any]) -> Notification | None:
    issue = payload["issue"]
    action = str(payload["action"])
    number, title = issue["number"], str(issue["title"])
    topic = f"{_repo(payload)} / issue #{number} {title}"
    ref = link(f"issue #{number}", issue.get("html_url"))
    user = _user(payload)
    if action == "opened":
        body = str(issue.get("body") or "").strip()
        head = f"{user} opened {ref}:"
        return Notification(topic, f"{head}\n\n{quote(body)}" if body else head.rstrip(":") + ".")
    if action in ("assigned", "unassigned"):
        assignee = (payload.get("assignee") or {}).get("login", "someone")
        word = "to" if action == "assigned" else "from"
        return Notification(topic, f"{user} {action} {assignee} {word} {ref}.")
    if action in ("closed", "reopened", "edited", "labeled", "unlabeled", "deleted", "pinned", "locked"):
        return Notification(topic, f"{user} {action} {ref}.")
    return None


def _issue_comment(payload: dict[str, Any]) -> Notification | None:
    issue, comment = payload["issue"], payload["comment"]
    action = str(payload["action"])
    number, title = issue["number"], str(issue["title"])
    kind = "PR" if issue.get("pull_request") else "issue"
    topic = f"{_repo(payload)} / {kind} #{number} {title}"
    ref = link(f"{kind} #{number}", issue.get("html_url"))
    verb = {"created": "commented", "edited": "edited a comment", "deleted": "deleted a comment"}.get(action)
    if verb is None:
        return None
    head = f"{_user(payload)} {link(verb, comment.get('html_url'))} on {ref}"
    body = str(comment.get("body") or "").strip()
    if action == "deleted" or not body:
        return Notification(topic, head + ".")
    return Notification(topic, f"{head}:\n\n{quote(body)}")


def _release(payload: dict[str, Any]) -> Notification | None:
    release = payload["release"]
    action = str(payload["action"])
    if action not in ("published", "created", "released", "prereleased", "edited", "deleted", "unpublished"):
        return None
    name = str(release.get("name") or release["tag_name"])
    text = f"{_user(payload)} {action} release {link(name, release.get('html_url'))}"
    text += f" for tag `{release['tag_name']}`." if name != release["tag_name"] else "."
    return Notification(_repo(payload), text)


_CONCLUSIONS = {
    "success": "succeeded",
    "failure": "failed",
    "cancelled": "was cancelled",
    "timed_out": "timed out",
    "skipped": "was skipped",
    "action_required": "needs action",
}


def _workflow_run(payload: dict[str, Any]) -> Notification | None:
    run = payload["workflow_run"]
    if payload["action"] != "completed":
        return None  # requested and in_progress would double every run's noise
    conclusion = str(run.get("conclusion") or "")
    outcome = _CONCLUSIONS.get(conclusion, f"completed ({conclusion or 'unknown'})")
    name = link(f"{run['name']} #{run.get('run_number', run['id'])}", run.get("html_url"))
    sha = str(run.get("head_sha", ""))[:7]
    text = f"Workflow {name} on branch {run.get('head_branch')} (`{sha}`) **{outcome}**."
    return Notification(_repo(payload), text)


def handle(request: WebhookRequest) -> WebhookResult:
    event = request.header("X-GitHub-Event")
    if not event:
        raise MalformedPayloadError("Missing the X-GitHub-Event header")
    payload = request.json_object()
    notification: Notification | None
    if event == "ping":
        notification = _ping(payload)
    elif event == "push":
        notification = _push(payload, request)
    elif event == "pull_request":
        notification = _pull_request(payload)
    elif event == "issues":
        notification = _issues(payload)
    elif event == "issue_comment":
        notification = _issue_comment(payload)
    elif event == "release":
        notification = _release(payload)
    elif event == "workflow_run":
        notification = _workflow_run(payload)
    else:
        raise UnsupportedEventError("GitHub", event)
    return WebhookResult(event, [notification] if notification is not None else [])


INTEGRATION = Integration(
    name=NAME,
    display_name="GitHub",
    handler=handle,
    all_event_types=EVENT_TYPES,
    config_options=(ConfigOption("branches", "Only pushes to these branches (comma-separated)"),),
    doc="Content type `application/json`; GitHub names the event in `X-GitHub-Event`.",
)
