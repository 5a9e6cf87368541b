"""Operation IDs where the view's name, dashed, is not Zulip's ID for the same operation.

An operation's ID is its view's name with dashes (``send_message`` → ``send-message``), which
for most views already is the reference's ID. This table names the rest, and the legacy
routes that share one view, so that every ID in the document is unique;
``tests/api/test_openapi.py`` checks the result against the reference.
"""

from __future__ import annotations

from collections.abc import Mapping

OPERATION_IDS: Mapping[tuple[str, str], str] = {
    ("GET", "/users/me/alert_words"): "get-alert-words",
    ("GET", "/calls/bigbluebutton/create"): "create-big-blue-button-video-call",
    ("GET", "/streams"): "get-streams",
    ("GET", "/streams/{stream_id:int}"): "get-stream-by-id",
    ("GET", "/streams/{stream_id:int}/members"): "get-subscribers",
    ("GET", "/drafts"): "get-drafts",
    ("POST", "/register"): "register-queue",
    ("GET", "/realm/linkifiers"): "get-linkifiers",
    ("GET", "/messages"): "get-messages",
    ("GET", "/messages/{message_id:int}"): "get-message",
    ("GET", "/messages/matches_narrow"): "check-messages-match-narrow",
    ("GET", "/users/me/{stream_id:int}/topics"): "get-stream-topics",
    ("POST", "/realm/playgrounds"): "add-code-playground",
    ("DELETE", "/realm/playgrounds/{playground_id:int}"): "remove-code-playground",
    ("GET", "/realm/presence"): "get-presence",
    ("GET", "/realm/profile_fields"): "get-custom-profile-fields",
    ("POST", "/realm/profile_fields"): "create-custom-profile-field",
    ("PATCH", "/realm/profile_fields"): "reorder-custom-profile-fields",
    ("POST", "/mobile_push/test_notification"): "test-notify",
    ("GET", "/realm/emoji"): "get-custom-emoji",
    ("POST", "/realm/emoji/{emoji_name}"): "upload-custom-emoji",
    ("DELETE", "/realm/emoji/{emoji_name}"): "deactivate-custom-emoji",
    ("GET", "/export/realm"): "get-realm-exports",
    ("POST", "/export/realm"): "export-realm",
    ("GET", "/export/realm/consents"): "get-realm-export-consents",
    ("GET", "/saved_snippets"): "get-saved-snippets",
    ("GET", "/scheduled_messages"): "get-scheduled-messages",
    ("PATCH", "/scheduled_messages/{scheduled_message_id:int}"): "update-scheduled-message",
    ("GET", "/users/me/subscriptions"): "get-subscriptions",
    ("POST", "/users/me/subscriptions/properties"): "update-subscription-settings",
    ("POST", "/messages/{message_id:int}/typing"): "set-typing-status-for-message-edit",
    ("GET", "/user_groups"): "get-user-groups",
    ("GET", "/users/{user_id:int}/status"): "get-user-status",
    ("GET", "/users"): "get-users",
    # Legacy routes served by the view of a newer one.
    ("PATCH", "/settings/display"): "update-display-settings",
    ("PATCH", "/settings/notifications"): "update-notification-settings",
    ("POST", "/users/me/subscriptions/{stream_id:int}"): "update-subscription-property-by-post",
}
