// Administration: the users list (roles, deactivate/reactivate) and organization settings.

import { ROLE_NAMES } from "../store/users.js";
import { h, clear } from "./dom.js";
import { field, submit } from "./settings.js";
import { twoFactorResetButton } from "./settings_auth.js";
import { t } from "../i18n.js";

export async function renderUsers(app, panel) {
  const table = h("table", { class: "settings-table" });
  panel.append(h("h2", { text: t("Users") }), table);
  // Deactivated users are not in the register state: the full list comes from the server.
  let members = [];
  try {
    members = (await app.api.get("/users", { include_custom_profile_fields: false })).members || [];
  } catch (error) {
    app.showError(error);
  }
  const amOwner = (app.state.users.get(app.state.myId) || {}).role === 100;
  const body = h("tbody");
  for (const user of members.filter((u) => !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name))) {
    const role = h("select", { "aria-label": t("Role of {name}", { name: user.full_name }), disabled: user.user_id === app.state.myId || (user.role === 100 && !amOwner) });
    for (const [value, label] of Object.entries(ROLE_NAMES)) {
      if (Number(value) === 100 && !amOwner) continue;
      role.append(h("option", { value, text: t(label), selected: Number(value) === user.role }));
    }
    if (user.role === 100 && !amOwner) role.append(h("option", { value: "100", text: t("Owner"), selected: true }));
    role.addEventListener("change", () => submit(app, () => app.api.patch(`/users/${user.user_id}`, { role: Number(role.value) }), t("{name} is now {role}", { name: user.full_name, role: t(ROLE_NAMES[role.value]) })));
    const active = user.is_active;
    const toggle = h("button", {
      type: "button", class: active ? "danger" : "", disabled: user.user_id === app.state.myId,
      text: active ? t("Deactivate") : t("Reactivate"),
      "aria-label": active ? t("Deactivate {name}", { name: user.full_name }) : t("Reactivate {name}", { name: user.full_name }),
      onclick: async () => {
        if (active && !window.confirm(t("Deactivate {name}?", { name: user.full_name }))) return;
        const done = await submit(app, () => (active ? app.api.del(`/users/${user.user_id}`) : app.api.post(`/users/${user.user_id}/reactivate`)),
          active ? t("{name} deactivated", { name: user.full_name }) : t("{name} reactivated", { name: user.full_name }));
        if (done) {
          clear(panel);
          renderUsers(app, panel);
        }
      },
    });
    body.append(h("tr", { class: active ? "" : "inactive" },
      h("td", { text: user.full_name }), h("td", { text: user.delivery_email || user.email }), h("td", {}, role), h("td", {}, toggle, twoFactorResetButton(app, user))));
  }
  table.append(h("thead", {}, h("tr", {}, h("th", { text: t("Name") }), h("th", { text: t("Email") }), h("th", { text: t("Role") }), h("th", { text: "" }))), body);
}

export function renderOrganization(app, panel) {
  const realm = app.state.realm;
  const name = h("input", { type: "text", value: realm.realm_name || "", required: true, maxlength: 40 });
  const description = h("textarea", { rows: 3, value: realm.realm_description || "" });
  const editing = h("input", { type: "checkbox", checked: realm.realm_allow_message_editing, id: "org-allow-editing" });
  const editLimit = h("input", { type: "number", min: 0, value: realm.realm_message_content_edit_limit_seconds ? Math.round(realm.realm_message_content_edit_limit_seconds / 60) : 0 });
  const inviteRequired = h("input", { type: "checkbox", checked: realm.realm_invite_required, id: "org-invite-required" });
  const form = h("form", {},
    ...field("org-name", t("Organization name"), name),
    ...field("org-description", t("Description"), description),
    h("div", { class: "row" }, inviteRequired, h("label", { for: "org-invite-required", text: t("Invitations are required to join") })),
    h("div", { class: "row" }, editing, h("label", { for: "org-allow-editing", text: t("Allow message editing") })),
    ...field("org-edit-limit", t("Time limit for editing messages, in minutes (0: no limit)"), editLimit),
    h("button", { type: "submit", class: "primary", text: t("Save organization settings") }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const minutes = Number(editLimit.value);
    submit(app, () => app.api.patch("/realm", {
      name: name.value.trim(),
      description: description.value,
      invite_required: inviteRequired.checked,
      allow_message_editing: editing.checked,
      message_content_edit_limit_seconds: minutes > 0 ? minutes * 60 : "unlimited",
    }));
  });
  panel.append(h("h2", { text: t("Organization") }), form);
}
