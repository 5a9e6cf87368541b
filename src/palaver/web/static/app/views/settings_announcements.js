// Settings: where the organization's automated messages go and how long messages are kept
// (administrators). The announcement channels (new channels, new users, server updates)
// are saved as chosen (PATCH /realm; -1 turns one off). Message retention, for the
// organization and per channel (PATCH /streams/{id}), is the owners' to change; others
// read it. Realm and stream events of a change made anywhere set the controls again,
// except the one being used.

import { t, tn } from "../i18n.js";
import { clear, h, isolateText } from "./dom.js";
import { field, submit } from "./settings.js";
import { keepFocus, myRole, readOnlyNote } from "./settings_kit.js";

const ANNOUNCEMENTS = () => [
  ["new_stream_announcements_stream_id", t("New channel announcements"), t("Where new channels are announced.")],
  ["signup_announcements_stream_id", t("New user announcements"), t("Where the arrival of new users is announced.")],
  ["zulip_update_announcements_stream_id", t("Server update announcements"), t("Where news of server updates is posted.")],
];

// Channels whose messages the administrator reads: public ones and their own private ones.
function readableChannels(app) {
  return app.state.subs.allStreams().filter((s) => !s.invite_only || app.state.subs.isSubscribed(s.stream_id));
}

// In its own bidi isolate: an option cannot hold a <bdi>, and a right-to-left page would
// otherwise draw "#name" as "name#".
function channelLabel(sub) {
  return isolateText((sub.invite_only ? "🔒 " : "#") + sub.name);
}

function retentionText(days) {
  return days === -1 || days === null || days === undefined ? t("Keep messages forever") : tn("Delete messages after {n} day", "Delete messages after {n} days", days);
}

// A choice of "forever" or a number of days, with its Save button.
function retentionForm(id, current, { disabled, onSave, extra = [] }) {
  const policy = h("select", { id: `${id}-policy`, disabled },
    ...extra.map(([value, text]) => h("option", { value, text })),
    h("option", { value: "unlimited", text: t("Keep messages forever") }),
    h("option", { value: "days", text: t("Delete messages after a number of days") }));
  const days = h("input", { type: "number", id: `${id}-days`, min: 1, step: 1, disabled, "aria-label": t("Days to keep messages") });
  const unit = h("span", { class: "hint", text: t("days") });
  const set = (value) => {
    if (typeof value === "string") {
      policy.value = value;
      days.value = "";
    } else if (value === -1 || value === null || value === undefined) {
      policy.value = "unlimited";
      days.value = "";
    } else {
      policy.value = "days";
      days.value = String(value);
    }
    showDays();
  };
  const showDays = () => {
    days.hidden = unit.hidden = policy.value !== "days";
    days.required = !days.hidden;
  };
  policy.addEventListener("change", showDays);
  set(current);
  const form = h("form", { class: "retention-form" }, h("div", { class: "row" }, policy, days, unit),
    disabled ? null : h("button", { type: "submit", class: "primary", text: t("Save retention") }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (policy.value !== "days") {
      onSave(policy.value);
      return;
    }
    const n = Math.round(Number(days.value));
    if (!(n >= 1)) return;
    if (!window.confirm(tn("Messages older than {n} day will be deleted for good. Continue?", "Messages older than {n} days will be deleted for good. Continue?", n))) return;
    onSave(n);
  });
  form.setValue = set;
  return form;
}

export function render(app, panel) {
  const realm = () => app.state.realm;
  const owner = myRole(app) === 100;
  panel.append(h("h2", { text: t("Announcements & retention") }));

  // Announcement channels.
  const announceSection = h("section", { class: "permission-section" }, h("h3", { text: t("Announcement channels") }));
  const selects = [];
  for (const [setting, label, hint] of ANNOUNCEMENTS()) {
    const key = `realm_${setting}`;
    if (!(key in realm())) continue;
    const id = `announce-${setting}`;
    const select = h("select", { id });
    const fill = () => {
      const current = realm()[key];
      clear(select).append(h("option", { value: "-1", text: t("Disabled") }),
        ...readableChannels(app).map((sub) => h("option", { value: String(sub.stream_id), text: channelLabel(sub) })));
      // A channel one cannot read (or no longer known) still shows as chosen.
      if (current > 0 && !select.querySelector(`option[value="${current}"]`)) select.append(h("option", { value: String(current), text: app.state.subs.name(current) }));
      select.value = String(current > 0 ? current : -1);
    };
    select.addEventListener("change", async () => {
      const done = await submit(app, () => app.api.patch("/realm", { [setting]: Number(select.value) }));
      if (done === null) fill();
    });
    fill();
    selects.push([select, fill]);
    announceSection.append(h("div", { class: "field-row" }, h("label", { for: id, text: label }), select), h("p", { class: "hint", text: hint }));
  }
  panel.append(announceSection);

  // Message retention: the organization's, then the channels with their own.
  const orgForm = retentionForm("retention-realm", realm().realm_message_retention_days, {
    disabled: !owner,
    onSave: (value) => submit(app, () => app.api.patch("/realm", { message_retention_days: value })),
  });
  panel.append(h("h3", { text: t("Message retention") }),
    h("label", { for: "retention-realm-policy", text: t("Organization's message retention") }), orgForm);
  if (!owner) panel.append(readOnlyNote(t("Only organization owners can change message retention.")));

  const overrides = h("ul", { class: "default-channel-list retention-list", "aria-label": t("Channels with their own retention") });
  panel.append(h("h4", { text: t("Channels with their own retention") }), overrides);
  let channelForm = null;
  if (owner) {
    const choice = h("select", { required: true });
    const form = retentionForm("retention-channel", "realm_default", {
      disabled: false,
      extra: [["realm_default", t("Organization default")]],
      onSave: async (value) => {
        if (!choice.value) return;
        await submit(app, () => app.api.patch(`/streams/${choice.value}`, { message_retention_days: value }));
      },
    });
    form.prepend(...field("retention-channel-choice", t("Channel"), choice));
    choice.addEventListener("change", () => {
      const sub = choice.value ? app.state.subs.get(Number(choice.value)) : null;
      const days = sub ? sub.message_retention_days : null;
      form.setValue(days === null || days === undefined ? "realm_default" : days);
    });
    channelForm = { choice, form };
    panel.append(h("h4", { text: t("Set a channel's retention") }), form);
  }

  const draw = () => keepFocus(panel, () => {
    for (const [select, fill] of selects) if (select !== document.activeElement) fill();
    const orgFocused = orgForm.contains(document.activeElement);
    if (!orgFocused) orgForm.setValue(realm().realm_message_retention_days);
    const own = app.state.subs.allStreams().filter((s) => s.message_retention_days !== null && s.message_retention_days !== undefined);
    clear(overrides).append(...own.map((sub) => h("li", { class: "default-channel-row" },
      h("span", { text: channelLabel(sub) }), h("span", { class: "hint", text: retentionText(sub.message_retention_days) }),
      owner ? h("button", { type: "button", text: t("Use organization default"), "aria-label": t("Use the organization's retention for {channel}", { channel: sub.name }),
        onclick: () => submit(app, () => app.api.patch(`/streams/${sub.stream_id}`, { message_retention_days: "realm_default" })) }) : null)));
    if (!own.length) overrides.append(h("li", { class: "side-empty", text: t("No channel has its own retention.") }));
    if (channelForm && document.activeElement !== channelForm.choice) {
      const chosen = channelForm.choice.value;
      clear(channelForm.choice).append(h("option", { value: "", text: t("Choose a channel") }),
        ...app.state.subs.allStreams().map((sub) => h("option", { value: String(sub.stream_id), text: channelLabel(sub) })));
      channelForm.choice.value = chosen;
    }
  });
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["realm", "subscriptions"];
}
