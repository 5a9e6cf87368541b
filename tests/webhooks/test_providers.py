"""Each integration with payloads written from its provider's documentation (fixtures/)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_json_success
from tests.webhooks.conftest import Hook, fixture


def post_raw(
    hook: Hook, integration: str, fixture_name: str, headers: dict[str, str] | None = None, **params: str
) -> tuple[str, str]:
    """(topic, raw Markdown) of the one message the fixture posts to #dev."""
    response = hook.post(integration, fixture(fixture_name), headers=headers, stream="dev", **params)
    message = hook.message(response)
    raw = assert_json_success(hook.api.get(hook.realm.hamlet, f"messages/{message['id']}"))["raw_content"]
    return message["subject"], raw


def gh(event: str) -> dict[str, str]:
    return {"X-GitHub-Event": event}


def test_github_push(hook: Hook) -> None:
    topic, raw = post_raw(hook, "github", "github_push.json", gh("push"))
    assert topic == "palaver / main"
    assert raw == (
        "octocat [pushed](https://github.com/octo-org/palaver/compare/6113728f27ae...0d1a26e67d8f)"
        " 2 commits to branch main.\n\n"
        "* Add the GitHub integration ([b1cd3f5](https://github.com/octo-org/palaver/commit/"
        "b1cd3f5d4a3e6d23c0ab6a7e4c1fd62a4b9d3ef0))\n"
        "* Fix a typo ([0d1a26e](https://github.com/octo-org/palaver/commit/"
        "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c))"
    )


def test_github_push_branch_filter_and_user_topic(hook: Hook) -> None:
    ignored = hook.post(
        "github", fixture("github_push.json"), headers=gh("push"), stream="dev", branches="release"
    )
    assert assert_json_success(ignored)["message_ids"] == []
    topic, _ = post_raw(hook, "github", "github_push.json", gh("push"), branches="dev,main", topic="commits")
    assert topic == "commits"


def test_github_ping_is_answered(hook: Hook) -> None:
    topic, raw = post_raw(hook, "github", "github_ping.json", gh("ping"))
    assert (topic, raw) == ("palaver", "GitHub webhook has been successfully configured by octocat.")


@pytest.mark.parametrize(
    ("event", "name", "topic", "raw"),
    [
        (
            "pull_request",
            "github_pull_request_opened.json",
            "palaver / PR #7 Add webhooks",
            "octocat opened [PR #7](https://github.com/octo-org/palaver/pull/7) from `webhooks` to `main`:"
            "\n\n```quote\nThis adds incoming webhooks.\n```",
        ),
        (
            "pull_request",
            "github_pull_request_merged.json",
            "palaver / PR #7 Add webhooks",
            "octocat merged [PR #7](https://github.com/octo-org/palaver/pull/7).",
        ),
        (
            "issues",
            "github_issues_opened.json",
            "palaver / issue #12 Emails are not sent",
            "octocat opened [issue #12](https://github.com/octo-org/palaver/issues/12):"
            "\n\n```quote\nNothing arrives at the SMTP server.\n```",
        ),
        (
            "issue_comment",
            "github_issue_comment.json",
            "palaver / issue #12 Emails are not sent",
            "hubot [commented](https://github.com/octo-org/palaver/issues/12#issuecomment-5) on "
            "[issue #12](https://github.com/octo-org/palaver/issues/12):"
            "\n\n```quote\nCould you check the `smtp_url` setting?\n```",
        ),
        (
            "release",
            "github_release_published.json",
            "palaver",
            "octocat published release [Palaver 1.2](https://github.com/octo-org/palaver/releases/tag/v1.2.0)"
            " for tag `v1.2.0`.",
        ),
        (
            "workflow_run",
            "github_workflow_run_completed.json",
            "palaver",
            "Workflow [CI #562](https://github.com/octo-org/palaver/actions/runs/30433642) on branch main"
            " (`acb5820`) **failed**.",
        ),
    ],
)
def test_github_events(hook: Hook, event: str, name: str, topic: str, raw: str) -> None:
    assert post_raw(hook, "github", name, gh(event)) == (topic, raw)


def test_github_missing_event_header(hook: Hook) -> None:
    response = hook.post("github", fixture("github_push.json"), stream="dev")
    assert response.status_code == 400
    assert response.json()["msg"] == "Missing the X-GitHub-Event header"


@pytest.mark.parametrize(
    ("header", "name", "topic", "raw"),
    [
        (
            "Push Hook",
            "gitlab_push.json",
            "Palaver / main",
            "John Smith pushed 1 commit to branch main.\n\n* Update the README "
            "([b6568db](https://gitlab.example.com/team/palaver/-/commit/b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327))",
        ),
        (
            "Merge Request Hook",
            "gitlab_merge_request_open.json",
            "Palaver / MR #3 Add Sentry support",
            "John Smith opened [MR #3](https://gitlab.example.com/team/palaver/-/merge_requests/3) from "
            "`sentry` to `main`:\n\n```quote\nCloses #2.\n```",
        ),
        (
            "Issue Hook",
            "gitlab_issue_open.json",
            "Palaver / issue #23 Pipeline is slow",
            "John Smith opened [issue #23](https://gitlab.example.com/team/palaver/-/issues/23):"
            "\n\n```quote\nTakes 20 minutes.\n```",
        ),
        (
            "Pipeline Hook",
            "gitlab_pipeline_failed.json",
            "Palaver",
            "[Pipeline #31](https://gitlab.example.com/team/palaver/-/pipelines/31) on branch main"
            " (`bcbb5ec`) **failed**.\n\nFailed jobs:\n* test: unit-tests",
        ),
    ],
)
def test_gitlab_events(hook: Hook, header: str, name: str, topic: str, raw: str) -> None:
    assert post_raw(hook, "gitlab", name, {"X-Gitlab-Event": header}) == (topic, raw)


def test_gitlab_unsupported_hook(hook: Hook) -> None:
    response = hook.post("gitlab", "{}", headers={"X-Gitlab-Event": "Wiki Page Hook"}, stream="dev")
    assert response.status_code == 400
    assert response.json()["code"] == "UNSUPPORTED_WEBHOOK_EVENT_TYPE"


def test_alertmanager(hook: Hook) -> None:
    topic, raw = post_raw(hook, "alertmanager", "alertmanager_firing.json")
    assert topic == "HighLatency"
    assert raw == (
        ":rotating_light: **FIRING**: 1 alert ([Alertmanager](http://alertmanager.example.com:9093))\n"
        "* p99 latency above 2s on web-1 ([source](http://prometheus.example.com:9090/graph?g0.expr=latency))"
        "\n\n:check: **RESOLVED**: 1 alert\n"
        "* web-2 latency back to normal ([source](http://prometheus.example.com:9090/graph?g0.expr=latency))"
    )
    # The topic label is configurable.
    topic, _ = post_raw(hook, "alertmanager", "alertmanager_firing.json", name="severity")
    assert topic == "page"


def test_grafana_unified_and_legacy(hook: Hook) -> None:
    topic, raw = post_raw(hook, "grafana", "grafana_alert_firing.json")
    assert topic == "DiskFull"
    assert raw.startswith(
        ":rotating_light: **FIRING**: [FIRING:1] DiskFull (db-1)\n* [firing] Disk 95% full on db-1"
    )
    assert "[dashboard](https://grafana.example.com/d/xyz)" in raw
    topic, raw = post_raw(hook, "grafana", "grafana_legacy_alerting.json")
    assert topic == "Panel Title alert"
    assert raw == (
        ":rotating_light: **ALERTING**: [Panel Title alert](https://grafana.example.com/d/xyz?viewPanel=2)\n\n"
        "```quote\nSomeone is testing the alert notification.\n```\n\n* High value: 100\n\n"
        "[graph](https://grafana.example.com/render/panel.png)"
    )


def test_sentry(hook: Hook) -> None:
    topic, raw = post_raw(hook, "sentry", "sentry_issue_created.json", {"Sentry-Hook-Resource": "issue"})
    assert topic == "ZeroDivisionError: division by zero"
    assert raw == (
        ":bug: New issue [PALAVER-4](https://sentry.io/organizations/team/issues/1170820242/): "
        "**ZeroDivisionError: division by zero**\n**Level:** error\n**Culprit:** `palaver.views in index`"
    )
    topic, raw = post_raw(hook, "sentry", "sentry_event_alert.json", {"Sentry-Hook-Resource": "event_alert"})
    assert topic == "KeyError: 'user'"
    assert raw.startswith(
        ":rotating_light: Alert rule *Notify the team* fired: [KeyError: 'user'](https://sentry.io/"
    )
    topic, raw = post_raw(hook, "sentry", "sentry_legacy.json")
    assert topic == "This is an example Python exception"
    assert raw.startswith(":bug: New event in Palaver: [This is an example Python exception]")


def test_slack_incoming_blocks_and_attachments(hook: Hook) -> None:
    topic, raw = post_raw(hook, "slack_incoming", "slack_incoming_blocks.json")
    assert topic == "Slack"
    assert raw == (
        "**Deploy finished**\n\n**api** was deployed to *production* by [run 9](https://ci.example.com/runs/9)\n"
        "**Version**\nv1.2.0\n\n---\n\n~~old~~ took 42s"
    )
    topic, raw = post_raw(hook, "slack_incoming", "slack_incoming_attachments.json")
    assert topic == "ops"
    assert raw == (
        "Build [#1](https://ci.example.com/b/1) **failed**\n\n"
        "**[Unit tests](https://ci.example.com/b/1/tests)**\n3 tests failed\n**Branch**: main\n*CI*"
    )


def test_slack_incoming_form_payload(hook: Hook) -> None:
    from urllib.parse import urlencode

    body = urlencode({"payload": '{"text": "Hi from <https://example.com|a form>"}'})
    response = hook.post(
        "slack_incoming", body, content_type="application/x-www-form-urlencoded", stream="dev", topic="t"
    )
    message = hook.message(response)
    assert 'Hi from <a href="https://example.com"' in message["content"]
