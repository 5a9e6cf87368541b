// Pieces the settings panels share: who is in which system group, a chooser for a
// group-setting value, a confirmation, a text download.

import { t } from "../i18n.js";
import { userInGroupSetting } from "../store/permissions.js";
import { h } from "./dom.js";

// The system groups in the order Zulip offers them, narrowest first; role:internet
// (spectators) is never a choice in these panels.
const SYSTEM_GROUPS = ["role:nobody", "role:owners", "role:administrators", "role:moderators", "role:fullmembers", "role:members", "role:everyone"];

export function systemGroupLabel(name) {
  return {
    "role:nobody": t("Nobody"),
    "role:owners": t("Owners"),
    "role:administrators": t("Administrators"),
    "role:moderators": t("Administrators and moderators"),
    "role:fullmembers": t("Full members"),
    "role:members": t("Everyone except guests"),
    "role:everyone": t("Everyone, including guests"),
    "role:internet": t("Everyone on the Internet"),
  }[name] || name;
}

export function myRole(app) {
  return (app.state.users.get(app.state.myId) || {}).role || 400;
}

export function isAdmin(app) {
  return myRole(app) <= 200;
}

export function groupName(group) {
  return group.is_system_group ? systemGroupLabel(group.name) : group.name;
}

export function groupsById(app) {
  return new Map(app.state.groups.map((g) => [g.id, g]));
}

// Does the signed-in person hold this group-setting value?
export function holds(app, value) {
  return userInGroupSetting(value, app.state.myId, groupsById(app));
}

// A <select> of who holds a permission: the system groups, then the organization's own
// groups. A value that is a set of people and groups (not one group) shows as "Custom"
// with who they are, kept as it is until another choice is made.
export function groupSettingSelect(app, id, value, { disabled = false, systemOnly = false, onChange } = {}) {
  const byName = new Map(app.state.groups.filter((g) => g.is_system_group).map((g) => [g.name, g]));
  const select = h("select", { id, disabled });
  select.describeCustom = (custom) => customLabel(app, custom);
  for (const name of SYSTEM_GROUPS) {
    const group = byName.get(name);
    if (group) select.append(h("option", { value: String(group.id), text: systemGroupLabel(name) }));
  }
  if (!systemOnly) {
    const own = app.state.groups.filter((g) => !g.is_system_group && !g.deactivated).sort((a, b) => a.name.localeCompare(b.name));
    if (own.length) select.append(h("optgroup", { label: t("User groups") }, own.map((g) => h("option", { value: String(g.id), text: g.name }))));
  }
  setGroupSettingSelect(select, value);
  if (onChange) select.addEventListener("change", () => onChange(Number(select.value)));
  return select;
}

export function setGroupSettingSelect(select, value) {
  const custom = select.querySelector('option[value="custom"]');
  if (typeof value === "number" && select.querySelector(`option[value="${value}"]`)) {
    if (custom) custom.remove();
    select.value = String(value);
    return;
  }
  const text = select.describeCustom ? select.describeCustom(value) : t("Custom");
  if (!custom) select.append(h("option", { value: "custom", text, disabled: true }));
  else custom.textContent = text;
  select.value = "custom";
}

// "Custom: Ann, Bob, Designers" for a setting held by some people and groups.
function customLabel(app, value) {
  if (!value || typeof value !== "object") return t("Custom");
  const byId = groupsById(app);
  const names = [
    ...(value.direct_members || []).map((id) => app.state.users.name(id)),
    ...(value.direct_subgroups || []).map((id) => (byId.get(id) ? groupName(byId.get(id)) : String(id))),
  ];
  return names.length ? t("Custom: {who}", { who: names.join(", ") }) : t("Nobody");
}

export function readOnlyNote(text) {
  return h("p", { class: "hint settings-read-only", text });
}

// A file of text offered for download (a bot's zuliprc).
export function downloadLink(name, text, label) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  return h("a", { href: url, download: name, class: "button-link", text: label });
}

export function zuliprc(email, apiKey) {
  const site = document.body.dataset.realmUrl || window.location.origin;
  return `[api]\nemail=${email}\nkey=${apiKey}\nsite=${site}\n`;
}

// Redraws a panel's content without losing the place of the control being used: the one
// with the focus (found again by its id) keeps it, and a text being typed keeps its words.
export function keepFocus(panel, draw) {
  const active = panel.contains(document.activeElement) ? document.activeElement : null;
  const id = active ? active.id : "";
  const typing = active && (active.tagName === "TEXTAREA" || (active.tagName === "INPUT" && ["text", "search", "url", "email", ""].includes(active.type)));
  const text = typing ? { value: active.value, start: active.selectionStart, end: active.selectionEnd } : null;
  draw();
  if (!id || panel.contains(active)) return;
  const again = document.getElementById(id);
  if (!again) return;
  if (text && again.value !== text.value) {
    again.value = text.value;
  }
  again.focus();
  if (text) again.setSelectionRange?.(text.start, text.end);
}
