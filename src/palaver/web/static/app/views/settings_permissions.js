// Settings: organization permissions (administrators). Each choice is saved as it is made
// (PATCH /realm); the realm events of a change made anywhere set the controls again,
// except the one being edited. Choices the server refuses are set back.

import { t } from "../i18n.js";
import { h } from "./dom.js";
import { submit } from "./settings.js";
import { groupSettingSelect, setGroupSettingSelect } from "./settings_kit.js";

// [setting without "realm_", label, offer only system groups]
const SECTIONS = () => [
  [t("Channels"), [
    ["can_create_public_channel_group", t("Who can create public channels")],
    ["can_create_private_channel_group", t("Who can create private channels")],
    ["can_add_subscribers_group", t("Who can add others to channels")],
  ]],
  [t("Invitations"), [
    ["can_invite_users_group", t("Who can send email invitations")],
    ["create_multiuse_invite_group", t("Who can create reusable invitation links")],
  ]],
  [t("Messages"), [
    ["allow_message_editing", t("Allow editing messages"), "checkbox"],
    ["message_content_edit_limit_seconds", t("Time limit for editing messages"), "limit"],
    ["can_delete_own_message_group", t("Who can delete their own messages")],
    ["message_content_delete_limit_seconds", t("Time limit for deleting one's own messages"), "limit"],
    ["can_delete_any_message_group", t("Who can delete any message")],
    ["can_mention_many_users_group", t("Who can notify a large number of users with a wildcard mention")],
  ]],
  [t("Topics"), [
    ["can_move_messages_between_topics_group", t("Who can move messages to another topic")],
    ["move_messages_within_stream_limit_seconds", t("Time limit for moving messages between topics"), "limit"],
    ["can_move_messages_between_channels_group", t("Who can move messages to another channel")],
    ["move_messages_between_streams_limit_seconds", t("Time limit for moving messages between channels"), "limit"],
    ["can_resolve_topics_group", t("Who can resolve topics")],
  ]],
  [t("Other permissions"), [
    ["can_add_custom_emoji_group", t("Who can add custom emoji")],
    ["can_create_groups", t("Who can create user groups")],
    ["can_manage_all_groups", t("Who can manage all user groups")],
    ["can_create_bots_group", t("Who can create any bot")],
    ["can_create_write_only_bots_group", t("Who can create bots that send messages into the organization")],
  ]],
];

// A time limit is given in minutes; empty means no limit ("unlimited" to the API).
function limitInput(id, seconds) {
  const input = h("input", { type: "number", id, min: 1, step: 1, placeholder: t("No limit") });
  setLimit(input, seconds);
  return input;
}

function setLimit(input, seconds) {
  input.value = seconds ? String(Math.round(seconds / 60)) : "";
}

export function render(app, panel) {
  const realm = () => app.state.realm;
  // setting -> function setting the control from the state
  const setters = new Map();
  const save = async (setting, value, reset) => {
    const done = await submit(app, () => app.api.patch("/realm", { [setting]: value }));
    if (done === null) reset();
  };
  panel.append(h("h2", { text: t("Organization permissions") }));
  for (const [title, settings] of SECTIONS()) {
    const section = h("section", { class: "permission-section" }, h("h3", { text: title }));
    for (const [setting, label, kind] of settings) {
      const key = `realm_${setting}`;
      if (!(key in realm())) continue;
      const id = `permission-${setting}`;
      let control;
      if (kind === "checkbox") {
        control = h("input", { type: "checkbox", id, checked: realm()[key] });
        const reset = () => { control.checked = Boolean(realm()[key]); };
        control.addEventListener("change", () => save(setting, control.checked, reset));
        setters.set(key, reset);
        section.append(h("div", { class: "row" }, control, h("label", { for: id, text: label })));
        continue;
      }
      if (kind === "limit") {
        control = limitInput(id, realm()[key]);
        const reset = () => setLimit(control, realm()[key]);
        control.addEventListener("change", () => {
          const minutes = Number(control.value);
          if (control.value !== "" && !(minutes >= 1)) {
            reset();
            return;
          }
          save(setting, control.value === "" ? "unlimited" : Math.round(minutes) * 60, reset);
        });
        setters.set(key, reset);
        section.append(h("div", { class: "field-row" }, h("label", { for: id, text: t("{label} (minutes)", { label }) }), control));
        continue;
      }
      control = groupSettingSelect(app, id, realm()[key], {
        onChange: (groupId) => save(setting, { new: groupId }, () => setGroupSettingSelect(control, realm()[key])),
      });
      setters.set(key, () => setGroupSettingSelect(control, realm()[key]));
      section.append(h("div", { class: "field-row" }, h("label", { for: id, text: label }), control));
    }
    panel.append(section);
  }
  panel.redraw = () => {
    for (const [key, set] of setters) {
      const control = document.getElementById(`permission-${key.slice("realm_".length)}`);
      if (control && control !== document.activeElement) set();
    }
  };
  panel.redrawOn = ["realm"];
}
