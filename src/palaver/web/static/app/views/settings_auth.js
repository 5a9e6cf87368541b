// Sign-in administration: the methods the organization offers and who may sign up through
// them (PATCH /realm authentication_methods, external_signup, require_two_factor; owners
// change them, administrators see them), and an administrator's reset of someone's second
// factor (DELETE /users/{id}/two_factor) for the users list. The sign-in log is
// settings_logins.js.

import { t } from "../i18n.js";
import { h, clear, toast } from "./dom.js";
import { submit } from "./settings.js";

// Zulip's method names (the keys of realm_authentication_methods), as people know them.
const METHOD_LABELS = {
  Email: () => t("Email and password"),
  LDAP: () => t("Company directory (LDAP)"),
  "OpenID Connect": () => t("Single sign-on (OpenID Connect)"),
};

function methodId(name) {
  return `auth-method-${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
}

function checkbox(id, label, checked, disabled, onChange) {
  const box = h("input", { type: "checkbox", id, checked, disabled });
  box.addEventListener("change", () => onChange(box));
  return h("div", { class: "row" }, box, h("label", { for: id, text: label }));
}

export function render(app, panel) {
  const draw = () => {
    clear(panel);
    const realm = app.state.realm;
    const owner = (app.state.users.get(app.state.myId) || {}).role === 100;
    // A failed change puts the box back; a successful one comes back as a realm event.
    const patch = async (box, params) => {
      if ((await submit(app, () => app.api.patch("/realm", params))) === null) box.checked = !box.checked;
    };
    const methods = h("fieldset", { class: "auth-methods" }, h("legend", { text: t("Sign-in methods") }));
    for (const [name, info] of Object.entries(realm.realm_authentication_methods || {})) {
      // Only what this server is configured for can be turned on.
      if (!info.available) continue;
      const label = METHOD_LABELS[name] ? METHOD_LABELS[name]() : name;
      methods.append(checkbox(methodId(name), label, info.enabled, !owner,
        (box) => patch(box, { authentication_methods: { [name]: box.checked } })));
    }
    const signup = checkbox("auth-external-signup", t("A first sign-in through the directory or a provider creates the account"),
      realm.realm_external_signup !== false, !owner, (box) => patch(box, { external_signup: box.checked }));
    const twoFactor = checkbox("auth-require-two-factor", t("Require two-factor authentication for everyone"),
      Boolean(realm.realm_require_two_factor), !owner, (box) => patch(box, { require_two_factor: box.checked }));
    panel.append(h("h2", { text: t("Authentication methods") }),
      owner ? null : h("p", { class: "hint", text: t("Only organization owners can change these settings.") }),
      methods, h("h3", { text: t("Accounts") }), signup, twoFactor);
  };
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["realm"];
}

// The users list's button for someone who lost their authenticator.
export function twoFactorResetButton(app, user) {
  return h("button", {
    type: "button",
    text: t("Reset two-factor"),
    "aria-label": t("Reset two-factor authentication of {name}", { name: user.full_name }),
    onclick: async () => {
      if (!window.confirm(t("Turn off two-factor authentication for {name}? Their password alone will sign them in until they set it up again.", { name: user.full_name }))) return;
      const data = await submit(app, () => app.api.del(`/users/${user.user_id}/two_factor`), "");
      if (!data) return;
      toast(data.had_two_factor
        ? t("Two-factor authentication turned off for {name}", { name: user.full_name })
        : t("{name} had no two-factor authentication", { name: user.full_name }));
    },
  });
}
