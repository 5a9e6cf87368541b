// The settings overlay: profile, preferences, API key, channels, and for administrators the
// users and the organization. Loaded on first use (not part of the first page load).

import { t } from "../i18n.js";
import { h, clear, toast, trapFocus } from "./dom.js";
import { renderChannels } from "./settings_channels.js";
import { renderOrganization, renderUsers } from "./settings_admin.js";
import { renderEmoji, renderInvitations } from "./settings_org.js";
import { lazyPanels } from "./settings_panels.js";

export function openSettings(app, tab = "profile") {
  const existing = document.getElementById("settings-overlay");
  if (existing) existing.remove();
  const admin = app.state.users.isAdmin();
  const tabs = [
    ["profile", t("Profile")],
    ["preferences", t("Preferences")],
    ["account", t("Account & API key")],
    ["channels", t("Channels")],
    ["invitations", t("Invitations")],
    ["emoji", t("Custom emoji")],
    ...(admin ? [["users", t("Users")], ["organization", t("Organization")]] : []),
  ];
  // Sections in modules of their own, loaded when first shown (settings_panels.js).
  const lazy = lazyPanels(app);
  for (const entry of lazy) {
    const at = tabs.findIndex(([name]) => name === entry.after);
    tabs.splice(at < 0 ? tabs.length : at + 1, 0, [entry.name, entry.label]);
  }
  const panel = h("div", { class: "settings-panel", role: "tabpanel", id: "settings-panel", tabindex: "-1" });
  const tabList = h("div", { class: "settings-tabs", role: "tablist", "aria-label": t("Settings sections"), "aria-orientation": "vertical" });
  const close = () => {
    overlay.remove();
    app.focusFeed();
  };
  const show = (name) => {
    for (const button of tabList.children) {
      const on = button.dataset.tab === name;
      button.setAttribute("aria-selected", String(on));
      button.tabIndex = on ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `settings-tab-${name}`);
    clear(panel);
    // A section that follows live changes sets panel.redraw (main.js calls it).
    panel.redraw = null;
    panel.redrawOn = null;
    panel.dataset.section = name;
    const render = { profile: renderProfile, preferences: renderPreferences, account: renderAccount, channels: renderChannels, users: renderUsers, organization: renderOrganization, invitations: renderInvitations, emoji: renderEmoji }[name];
    if (render) {
      render(app, panel);
      return;
    }
    const entry = lazy.find((p) => p.name === name);
    entry.load().then((module) => {
      // Another section may have been chosen while the module loaded.
      if (panel.dataset.section === name && panel.isConnected) module.render(app, panel);
    }).catch((error) => app.showError(error));
  };
  for (const [name, label] of tabs) {
    tabList.append(h("button", { type: "button", role: "tab", id: `settings-tab-${name}`, "aria-controls": "settings-panel", dataset: { tab: name }, text: label, onclick: () => show(name) }));
  }
  tabList.addEventListener("keydown", (event) => {
    const buttons = [...tabList.children];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = buttons[(at + (event.key === "ArrowDown" ? 1 : -1) + buttons.length) % buttons.length];
      next.focus();
      show(next.dataset.tab);
    }
  });
  tabList.append(h("button", { type: "button", class: "close-settings", text: t("Close"), onclick: close }));
  // The top bar's Log out does not fit a phone's: it is here too.
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  tabList.append(h("form", { method: "post", action: "/accounts/logout/", class: "settings-logout" },
    h("input", { type: "hidden", name: "csrfmiddlewaretoken", value: csrf }),
    h("button", { type: "submit", class: "link-button", text: t("Log out") })));
  const dialog = h("div", { class: "dialog settings", role: "dialog", "aria-modal": "true", "aria-label": t("Settings") }, tabList, panel);
  const overlay = h("div", { class: "overlay", id: "settings-overlay" }, dialog);
  overlay.addEventListener("mousedown", (event) => event.target === overlay && close());
  trapFocus(dialog);
  document.body.append(overlay);
  show(tabs.some(([name]) => name === tab) ? tab : "profile");
  const selected = tabList.querySelector('[aria-selected="true"]');
  if (selected) selected.focus();
}

// A labelled form field; returns [label, input].
export function field(id, label, input) {
  input.id = id;
  return [h("label", { for: id, text: label }), input];
}

// Runs an API call from a form, reporting success or the server's error message.
export async function submit(app, call, success = t("Saved")) {
  try {
    const result = await call();
    if (success) toast(success);
    return result;
  } catch (error) {
    app.showError(error);
    return null;
  }
}

function renderProfile(app, panel) {
  const me = app.state.users.get(app.state.myId) || {};
  const name = h("input", { type: "text", value: me.full_name || "", required: true, maxlength: 60 });
  const nameForm = h("form", {}, ...field("settings-full-name", t("Full name"), name), h("button", { type: "submit", class: "primary", text: t("Save name") }));
  nameForm.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(app, () => app.api.patch("/settings", { full_name: name.value.trim() }));
  });
  const oldPassword = h("input", { type: "password", autocomplete: "current-password", required: true });
  const newPassword = h("input", { type: "password", autocomplete: "new-password", required: true, minlength: 6 });
  const passwordForm = h("form", {},
    ...field("settings-old-password", t("Current password"), oldPassword),
    ...field("settings-new-password", t("New password"), newPassword),
    h("button", { type: "submit", class: "primary", text: t("Change password") }));
  passwordForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const done = await submit(app, () => app.api.patch("/settings", { old_password: oldPassword.value, new_password: newPassword.value }), t("Password changed"));
    if (done) passwordForm.reset();
  });
  panel.append(h("h2", { text: t("Profile") }), h("p", { text: t("Email: {email}", { email: me.email || "" }) }), nameForm, h("h3", { text: t("Password") }), passwordForm);
}

// A function, not a constant: the labels are translated when the panel is drawn.
const notificationSettings = () => [
  ["enable_desktop_notifications", t("Desktop notifications for direct messages and mentions")],
  ["enable_sounds", t("Sounds for direct messages and mentions")],
  ["enable_offline_email_notifications", t("Email me about direct messages and mentions while I am away")],
  ["enable_stream_desktop_notifications", t("Desktop notifications for every channel message")],
  ["send_stream_typing_notifications", t("Let others see when I am typing in channels")],
  ["send_private_typing_notifications", t("Let others see when I am typing a direct message")],
  ["enable_drafts_synchronization", t("Save drafts on the server")],
];

function renderPreferences(app, panel) {
  const settings = app.state.settings;
  const scheme = h("select", { onchange: () => submit(app, () => app.api.patch("/settings", { color_scheme: Number(scheme.value) })) },
    h("option", { value: "1", text: t("Automatic (follow the system)"), selected: settings.color_scheme === 1 }),
    h("option", { value: "2", text: t("Light"), selected: settings.color_scheme === 2 }),
    h("option", { value: "3", text: t("Dark"), selected: settings.color_scheme === 3 }));
  panel.append(h("h2", { text: t("Preferences") }), h("h3", { text: t("Theme") }), ...field("settings-color-scheme", t("Color scheme"), scheme), h("h3", { text: t("Notifications") }));
  for (const [key, label] of notificationSettings()) {
    if (!(key in settings)) continue;
    const box = h("input", { type: "checkbox", checked: settings[key], id: `setting-${key}` });
    box.addEventListener("change", () => submit(app, () => app.api.patch("/settings", { [key]: box.checked })));
    panel.append(h("div", { class: "row" }, box, h("label", { for: `setting-${key}`, text: label })));
  }
  if ("Notification" in window && Notification.permission === "default") {
    panel.append(h("button", { type: "button", text: t("Allow desktop notifications in this browser"), onclick: () => Notification.requestPermission() }));
  }
}

function renderAccount(app, panel) {
  const me = app.state.users.get(app.state.myId) || {};
  const password = h("input", { type: "password", autocomplete: "current-password", required: true });
  const result = h("div", { "aria-live": "polite" });
  const form = h("form", {}, h("p", { text: t("Your API key lets programs (bots, integrations, the Zulip apps) act as you. Enter your password to see it.") }),
    ...field("settings-api-password", t("Password"), password), h("button", { type: "submit", class: "primary", text: t("Get API key") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = await submit(app, () => app.api.post("/fetch_api_key", { username: me.delivery_email || me.email, password: password.value }), "");
    if (!data) return;
    const email = data.email || me.email;
    const site = document.body.dataset.realmUrl || window.location.origin;
    const zuliprc = `[api]\nemail=${email}\nkey=${data.api_key}\nsite=${site}\n`;
    const url = URL.createObjectURL(new Blob([zuliprc], { type: "text/plain" }));
    clear(result).append(
      h("p", { text: t("API key:") }), h("p", { class: "api-key", id: "api-key", text: data.api_key }),
      h("a", { href: url, download: "zuliprc", class: "button-link", text: t("Download zuliprc") }));
    form.remove();
  });
  panel.append(h("h2", { text: t("Account & API key") }), form, result);
}
