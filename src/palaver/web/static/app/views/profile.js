// The profile card (a click on a name or an avatar) and the dialog setting one's own status.
// Loaded on first use.

import { formatDate, language, N_, t } from "../i18n.js";
import { narrowToHash } from "../narrow.js";
import { ROLE_NAMES } from "../store/users.js";
import { h, avatar, statusEmoji, toast } from "./dom.js";
import { openEmojiPicker, placeNear } from "./emoji_picker.js";
import { dialog } from "./menus.js";

const CARD_ID = "profile-card";
// The realm's custom profile fields, fetched once per page.
let fieldsPromise = null;

function profileFields(app) {
  if (!fieldsPromise) fieldsPromise = app.api.get("/realm/profile_fields").then((d) => d.custom_fields || []).catch(() => { fieldsPromise = null; return []; });
  return fieldsPromise;
}

function localTime(timezone) {
  if (!timezone) return null;
  try {
    return new Intl.DateTimeFormat(language(), { timeZone: timezone, hour: "2-digit", minute: "2-digit", weekday: "short" }).format(new Date());
  } catch {
    return null;
  }
}

function lastActive(app, userId) {
  const p = app.state.presence.byId.get(userId);
  const status = app.state.presence.status(userId);
  if (app.state.statuses.get(userId)?.away) return t("Away");
  if (status === "active") return t("Active now");
  if (status === "idle") return t("Idle");
  const last = p ? Math.max(p.active_timestamp, p.idle_timestamp) : 0;
  if (!last) return t("Not active yet");
  const minutes = Math.round((app.state.presence.now() - last) / 60);
  if (minutes < 60) return t("Active {n} minutes ago", { n: minutes });
  if (minutes < 48 * 60) return t("Active {n} hours ago", { n: Math.round(minutes / 60) });
  return t("Active {n} days ago", { n: Math.round(minutes / 1440) });
}

export function closeProfile() {
  const card = document.getElementById(CARD_ID);
  if (card) card.remove();
  document.removeEventListener("mousedown", outside);
}

function outside(event) {
  const card = document.getElementById(CARD_ID);
  if (card && !card.contains(event.target)) closeProfile();
}

export async function openProfile(app, userId, anchor) {
  closeProfile();
  await app.usersReady();
  const { state } = app;
  const user = state.users.get(userId);
  if (!user) return;
  const status = state.statuses.get(userId) || {};
  const me = userId === state.myId;
  const time = localTime(user.timezone);
  const go = (terms) => {
    closeProfile();
    app.narrow(terms);
  };
  const fields = h("dl", { class: "profile-fields" });
  const card = h("div", { id: CARD_ID, class: "popover profile-card", role: "dialog", "aria-label": t("Profile of {name}", { name: user.full_name }) },
    h("div", { class: "profile-head" }, avatar(user, "large"),
      h("div", {},
        h("h2", { class: "profile-name" }, user.full_name, statusEmoji(state, userId)),
        status.status_text ? h("p", { class: "profile-status", text: status.status_text }) : null,
        h("p", { class: "profile-meta", text: [user.is_bot ? t("Bot") : t(ROLE_NAMES[user.role] || N_("Member")), lastActive(app, userId)].join(" · ") }))),
    h("dl", { class: "profile-fields" },
      h("dt", { text: t("Email") }), h("dd", { text: user.delivery_email || user.email }),
      time ? [h("dt", { text: t("Local time") }), h("dd", { text: time })] : null,
      user.date_joined ? [h("dt", { text: t("Joined") }), h("dd", { text: formatDate(new Date(user.date_joined)) })] : null),
    fields,
    h("div", { class: "profile-actions" },
      me ? h("button", { type: "button", text: t("Set your status…"), onclick: () => { closeProfile(); openStatusDialog(app); } }) : null,
      h("button", { type: "button", class: "primary", text: me ? t("Message yourself") : t("Send direct message"), onclick: () => {
        closeProfile();
        app.compose.start("dm", { userIds: [userId] });
      } }),
      h("button", { type: "button", text: t("View messages"), onclick: () => go([{ operator: "sender", operand: userId, negated: false }]) }),
      h("button", { type: "button", text: t("View direct messages"), onclick: () => go([{ operator: "dm", operand: [userId], negated: false }]) }),
      state.users.isAdmin() && !me ? h("button", { type: "button", text: t("Manage this user"), onclick: () => { closeProfile(); app.openSettings("users"); } }) : null));
  card.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      closeProfile();
      if (anchor.isConnected) anchor.focus();
    }
  });
  document.body.append(card);
  placeNear(card, anchor);
  card.querySelector(".profile-actions .primary").focus();
  setTimeout(() => document.addEventListener("mousedown", outside), 0);
  // Custom profile fields: the definitions once, the person's values each time.
  const [definitions, detail] = await Promise.all([
    profileFields(app),
    app.api.get(`/users/${userId}`, { include_custom_profile_fields: true }).catch(() => null),
  ]);
  const data = (detail && detail.user && detail.user.profile_data) || {};
  for (const field of definitions) {
    const value = data[field.id] || data[String(field.id)];
    if (!value || !value.value) continue;
    fields.append(h("dt", { text: field.name }), h("dd", { text: fieldText(state, field, value.value) }));
  }
  // The anchor may have been redrawn meanwhile (a live update of its list).
  if (card.isConnected && anchor.isConnected) placeNear(card, anchor);
}

// Field types (Zulip's numbers): 3 a choice, 6 users (a JSON list of ids); the rest text.
function fieldText(state, field, value) {
  if (field.type === 3) {
    try {
      const choices = JSON.parse(field.field_data || "{}");
      return (choices[value] && choices[value].text) || value;
    } catch {
      return value;
    }
  }
  if (field.type === 6) {
    try {
      return JSON.parse(value).map((id) => state.users.name(id)).join(", ");
    } catch {
      return value;
    }
  }
  return value;
}

export function openStatusDialog(app) {
  const mine = app.state.statuses.get(app.state.myId) || {};
  let emoji = mine.emoji_name ? { emoji_name: mine.emoji_name, emoji_code: mine.emoji_code, reaction_type: mine.reaction_type } : null;
  const text = h("input", { type: "text", id: "status-text", maxlength: 60, value: mine.status_text || "", placeholder: t("What's your status?") });
  const away = h("input", { type: "checkbox", id: "status-away", checked: Boolean(mine.away) });
  const emojiButton = h("button", { type: "button", class: "status-emoji-button", "aria-label": t("Status emoji") });
  const drawEmoji = () => {
    emojiButton.replaceChildren(emoji ? statusEmoji({ statuses: new Map([[0, emoji]]), emoji: app.state.emoji }, 0) : "☺");
  };
  emojiButton.addEventListener("click", () => openEmojiPicker(app, emojiButton, (choice) => {
    emoji = choice;
    drawEmoji();
  }));
  drawEmoji();
  const presets = [["📅", "calendar", N_("In a meeting")], ["🚌", "bus", N_("Commuting")], ["🤒", "face_with_thermometer", N_("Out sick")], ["🌴", "palm_tree", N_("Vacationing")], ["🏠", "house", N_("Working remotely")]];
  const presetButtons = h("div", { class: "status-presets" }, presets.map(([, name, label]) => h("button", { type: "button", class: "link-button", text: t(label), onclick: async () => {
    text.value = t(label);
    const { loadEmojiNames } = await import("./emoji_picker.js");
    const code = new Map(await loadEmojiNames()).get(name);
    if (code) {
      emoji = { emoji_name: name, emoji_code: code, reaction_type: "unicode_emoji" };
      drawEmoji();
    }
  } })));
  const save = async (params) => {
    try {
      await app.api.post("/users/me/status", params);
      toast(t("Status saved"));
    } catch (error) {
      app.showError(error);
      return false;
    }
    return true;
  };
  const { close } = dialog(t("Set your status"), [
    h("div", { class: "status-row" }, emojiButton, h("label", { for: "status-text", class: "visually-hidden", text: t("Status text") }), text),
    presetButtons,
    h("label", { class: "check" }, away, t("Away (others see you as not available)")),
    h("button", { type: "button", class: "link-button", text: t("Clear status"), onclick: async () => {
      if (await save({ status_text: "", emoji_name: "", emoji_code: "", reaction_type: "unicode_emoji", away: false })) close();
    } }),
  ], {
    onSubmit: () => save({
      status_text: text.value.trim(),
      emoji_name: emoji ? emoji.emoji_name : "",
      emoji_code: emoji ? emoji.emoji_code : "",
      reaction_type: emoji ? emoji.reaction_type : "unicode_emoji",
      away: away.checked,
    }),
  });
}
