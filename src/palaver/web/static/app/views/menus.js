// Pop-up menus (role=menu, arrow keys, Escape), confirmations, and the topic and channel
// menus of the sidebar, the recipient bars and the Inbox: mute, follow, resolve, move,
// mark as read, copy a link; a channel's mute, pin, colour, notifications and settings.

import { N_, t } from "../i18n.js";
import { narrowToHash } from "../narrow.js";
import { FOLLOWED, INHERIT, MUTED, UNMUTED } from "../store/subscriptions.js";
import { h, isolateText, toast, trapFocus } from "./dom.js";
import { placeNear } from "./emoji_picker.js";

const RESOLVED_PREFIX = "✔ ";
const MENU_ID = "message-menu";

// items: [label, run] pairs (falsy ones are skipped).
export function showMenu(anchor, label, items) {
  closeMenu();
  const menu = h("ul", { id: MENU_ID, class: "popover menu", role: "menu", "aria-label": label });
  for (const [text, run] of items.filter(Boolean)) {
    menu.append(h("li", { role: "none" }, h("button", { type: "button", role: "menuitem", text, onclick: () => {
      closeMenu();
      run();
    } })));
  }
  menu.addEventListener("keydown", (event) => {
    const buttons = [...menu.querySelectorAll("button")];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "Escape") {
      closeMenu();
      anchor.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      buttons[(at + (event.key === "ArrowDown" ? 1 : -1) + buttons.length) % buttons.length].focus();
    }
    event.stopPropagation();
  });
  document.body.append(menu);
  placeNear(menu, anchor);
  menu.querySelector("button").focus();
  setTimeout(() => document.addEventListener("mousedown", outsideMenu), 0);
  return menu;
}

function outsideMenu(event) {
  const menu = document.getElementById(MENU_ID);
  if (menu && !menu.contains(event.target)) closeMenu();
}

export function closeMenu() {
  const menu = document.getElementById(MENU_ID);
  if (menu) menu.remove();
  document.removeEventListener("mousedown", outsideMenu);
}

// A modal dialog around a form; returns {overlay, form, close}. Closing it focuses
// ``returnFocus``: by default what had the focus before it opened.
export function dialog(title, body, { submitLabel = t("Save"), onSubmit, danger = false, returnFocus = document.activeElement } = {}) {
  const close = () => {
    overlay.remove();
    if (returnFocus && returnFocus.isConnected) returnFocus.focus({ preventScroll: true });
  };
  const titleId = `dialog-${Math.random().toString(36).slice(2)}`;
  const form = h("form", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": titleId },
    h("h2", { id: titleId, text: title }), body,
    h("div", { class: "dialog-buttons" },
      onSubmit ? h("button", { type: "submit", class: danger ? "danger" : "primary", text: submitLabel }) : null,
      h("button", { type: "button", text: onSubmit ? t("Cancel") : t("Close"), onclick: close })));
  const overlay = h("div", { class: "overlay" }, form);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (onSubmit && (await onSubmit()) !== false) close();
  });
  overlay.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
    }
  });
  overlay.addEventListener("mousedown", (event) => event.target === overlay && close());
  trapFocus(form);
  document.body.append(overlay);
  const first = form.querySelector("input, select, textarea, button[type=submit]");
  if (first) first.focus();
  return { overlay, form, close };
}

export function confirmDialog(title, text, confirmLabel, run) {
  return dialog(title, h("p", { text }), { submitLabel: confirmLabel, onSubmit: run, danger: true });
}

async function call(app, promise, done) {
  try {
    await promise;
    if (done) toast(done);
  } catch (error) {
    app.showError(error);
  }
}

export function topicLink(app, streamId, topic) {
  const terms = [{ operator: "channel", operand: streamId }, { operator: "topic", operand: topic }];
  return `${window.location.origin}/${narrowToHash(terms, app.lookup)}`;
}

export async function copyText(text, done) {
  try {
    await navigator.clipboard.writeText(text);
    toast(done);
  } catch {
    window.prompt(t("Copy this link"), text);
  }
}

export function setTopicPolicy(app, streamId, topic, policy) {
  return call(app, app.api.post("/user_topics", { stream_id: streamId, topic, visibility_policy: policy }));
}

// The newest message id known for a topic: what resolve and move act on.
async function topicMessageId(app, streamId, topic) {
  const known = app.state.subs.topicsOf(streamId).find((x) => x.name.toLowerCase() === topic.toLowerCase());
  if (known && known.maxId) return known.maxId;
  const data = await app.api.get("/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [{ operator: "channel", operand: streamId }, { operator: "topic", operand: topic }] });
  return data.messages && data.messages.length ? data.messages[0].id : null;
}

export function openTopicMenu(app, anchor, streamId, topic) {
  const { state } = app;
  const policy = state.subs.policy(streamId, topic);
  const sub = state.subs.get(streamId) || {};
  const probe = { type: "stream", stream_id: streamId, subject: topic, timestamp: Date.now() / 1000 };
  const perms = state.permissions;
  const resolved = topic.startsWith(RESOLVED_PREFIX);
  const unread = app.counts().byTopic.get(`${streamId}\u0000${topic.toLowerCase()}`) || 0;
  showMenu(anchor, t("Topic actions"), [
    policy === FOLLOWED ? [t("Unfollow topic"), () => setTopicPolicy(app, streamId, topic, INHERIT)] : [t("Follow topic"), () => setTopicPolicy(app, streamId, topic, FOLLOWED)],
    sub.is_muted
      ? (policy === UNMUTED || policy === FOLLOWED ? [t("Mute topic"), () => setTopicPolicy(app, streamId, topic, MUTED)] : [t("Unmute topic"), () => setTopicPolicy(app, streamId, topic, UNMUTED)])
      : (policy === MUTED ? [t("Unmute topic"), () => setTopicPolicy(app, streamId, topic, INHERIT)] : [t("Mute topic"), () => setTopicPolicy(app, streamId, topic, MUTED)]),
    unread && [t("Mark as read"), () => call(app, app.api.post("/mark_topic_as_read", { stream_id: streamId, topic_name: topic }))],
    [t("Copy link to topic"), () => copyText(topicLink(app, streamId, topic), t("Link copied"))],
    perms.canResolve(probe) && [resolved ? t("Unresolve topic") : t("Resolve topic"), async () => {
      const id = await topicMessageId(app, streamId, topic);
      const newTopic = resolved ? topic.slice(RESOLVED_PREFIX.length) : RESOLVED_PREFIX + topic;
      if (id) await call(app, app.api.patch(`/messages/${id}`, { topic: newTopic, propagate_mode: "change_all" }));
    }],
    perms.canMoveTopic(probe) && [t("Move topic…"), async () => {
      const id = await topicMessageId(app, streamId, topic);
      if (id) app.actions.openMove(id, probe);
    }],
  ]);
}

function setSubProperty(app, streamId, property, value) {
  return call(app, app.api.post("/users/me/subscriptions/properties", { subscription_data: [{ stream_id: streamId, property, value }] }));
}

export function openChannelMenu(app, anchor, streamId) {
  const sub = app.state.subs.get(streamId);
  if (!sub) return;
  const unread = (app.counts().byStream.get(streamId) || 0) + (app.counts().mutedByStream.get(streamId) || 0);
  showMenu(anchor, t("Channel actions"), [
    [sub.pin_to_top ? t("Unpin channel") : t("Pin channel to top"), () => setSubProperty(app, streamId, "pin_to_top", !sub.pin_to_top)],
    [sub.is_muted ? t("Unmute channel") : t("Mute channel"), () => setSubProperty(app, streamId, "is_muted", !sub.is_muted)],
    unread && [t("Mark all messages as read"), () => call(app, app.api.post("/mark_stream_as_read", { stream_id: streamId }))],
    [t("Change colour…"), () => openColour(app, sub)],
    [t("Notification settings…"), () => openNotifications(app, sub)],
    [t("Copy link to channel"), () => copyText(`${window.location.origin}/${narrowToHash([{ operator: "channel", operand: streamId }], app.lookup)}`, t("Link copied"))],
    // Administrators edit the channel itself; others find it in the channel browser.
    app.state.users.isAdmin()
      ? [t("Channel settings…"), () => import("./channel_settings.js").then((m) => m.openChannelSettings(app, streamId))]
      : [t("Channel settings"), () => app.openSettings("channels", streamId)],
  ]);
}

function openColour(app, sub) {
  const input = h("input", { type: "color", id: "channel-colour", value: sub.color || "#76ce90" });
  dialog(t("Colour of {channel}", { channel: isolateText(`#${sub.name}`) }), [h("label", { for: "channel-colour", text: t("Colour") }), input], {
    onSubmit: () => setSubProperty(app, sub.stream_id, "color", input.value),
  });
}

// Per-channel notification settings: each either follows the personal default or is set.
const NOTIFICATIONS = [
  ["desktop_notifications", N_("Desktop notifications"), "enable_stream_desktop_notifications"],
  ["audible_notifications", N_("Sounds"), "enable_stream_audible_notifications"],
  ["push_notifications", N_("Mobile notifications"), "enable_stream_push_notifications"],
  ["email_notifications", N_("Emails"), "enable_stream_email_notifications"],
  ["wildcard_mentions_notify", N_("Notify for @all and @channel mentions"), "wildcard_mentions_notify"],
];

function openNotifications(app, sub) {
  const selects = [];
  const rows = NOTIFICATIONS.map(([property, label, setting]) => {
    const value = sub[property];
    const fallback = app.state.settings[setting] ? t("On") : t("Off");
    const select = h("select", { id: `notify-${property}` },
      h("option", { value: "default", text: t("Default ({value})", { value: fallback }), selected: value === null || value === undefined }),
      h("option", { value: "true", text: t("On"), selected: value === true }),
      h("option", { value: "false", text: t("Off"), selected: value === false }));
    selects.push([property, select, value, Boolean(app.state.settings[setting])]);
    return [h("label", { for: select.id, text: t(label) }), select];
  });
  dialog(t("Notifications for {channel}", { channel: isolateText(`#${sub.name}`) }), rows, {
    onSubmit: async () => {
      const data = [];
      for (const [property, select, old, personal] of selects) {
        // The API takes true or false: "default" is the personal setting's value.
        if (select.value === "default" && (old === null || old === undefined)) continue;
        const value = select.value === "default" ? personal : select.value === "true";
        if (value !== old) data.push({ stream_id: sub.stream_id, property, value });
      }
      if (data.length) await call(app, app.api.post("/users/me/subscriptions/properties", { subscription_data: data }), t("Saved"));
    },
  });
}

export function confirmMarkAllRead(app) {
  confirmDialog(t("Mark all messages as read?"), t("Every unread message in every channel and direct message will be marked as read."), t("Mark all as read"),
    () => call(app, app.api.post("/mark_all_as_read")));
}
