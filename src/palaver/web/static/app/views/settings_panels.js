// The settings sections that live in modules of their own: each module is loaded with
// import() the first time its section is shown, so neither the first page load nor the
// settings screen carries panels nobody opened. A module exports render(app, panel); a
// section that follows live changes sets panel.redraw and panel.redrawOn (change tags
// of store/dispatch.js).
//
// `after` places a section's tab after an existing one (else at the end); `shown` says
// whether this person sees the section at all. Sections shown to everyone are read-only
// for those the organization's settings do not permit to change them.

import { t } from "../i18n.js";

function role(app) {
  return (app.state.users.get(app.state.myId) || {}).role || 400;
}

const everyone = () => true;
const notGuests = (app) => role(app) !== 600;
const admins = (app) => role(app) <= 200;

const PANELS = [
  { name: "avatar", label: () => t("Avatar"), after: "profile", shown: everyone, load: () => import("./settings_avatar.js") },
  { name: "display", label: () => t("Display & language"), after: "preferences", shown: everyone, load: () => import("./settings_display.js") },
  { name: "bots", label: () => t("Bots"), after: "account", shown: notGuests, load: () => import("./settings_bots.js") },
  { name: "groups", label: () => t("User groups"), shown: notGuests, load: () => import("./settings_groups.js") },
  { name: "default_channels", label: () => t("Default channels"), shown: notGuests, load: () => import("./settings_default_channels.js") },
  { name: "linkifiers", label: () => t("Linkifiers"), shown: everyone, load: () => import("./settings_linkifiers.js") },
  { name: "playgrounds", label: () => t("Code playgrounds"), shown: everyone, load: () => import("./settings_playgrounds.js") },
  { name: "announcements", label: () => t("Announcements & retention"), after: "organization", shown: admins, load: () => import("./settings_announcements.js") },
  { name: "permissions", label: () => t("Organization permissions"), shown: admins, load: () => import("./settings_permissions.js") },
  { name: "authentication", label: () => t("Authentication methods"), shown: admins, load: () => import("./settings_auth.js") },
  { name: "logins", label: () => t("Sign-in log"), shown: admins, load: () => import("./settings_logins.js") },
];

export function lazyPanels(app) {
  return PANELS.filter((panel) => panel.shown(app)).map((panel) => ({ ...panel, label: panel.label() }));
}
