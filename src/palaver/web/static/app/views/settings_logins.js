// The sign-in audit log for administrators (GET /realm/logins): every sign-in, newest
// first, for everyone or one person, and administrators' changes to someone's sign-in.

import { t } from "../i18n.js";
import { h, clear, formatDateTime } from "./dom.js";
import { submit } from "./settings.js";

const LOGIN_METHODS = {
  password: () => t("Password"),
  ldap: () => t("Company directory"),
  passkey: () => t("Passkey"),
  two_factor_reset: () => t("Two-factor authentication reset"),
};

const CHANNELS = {
  web: () => t("Browser"),
  api: () => t("API key"),
  app: () => t("App"),
  admin: () => t("Administrator"),
};

function methodLabel(method) {
  if (LOGIN_METHODS[method]) return LOGIN_METHODS[method]();
  return method.startsWith("oidc:") ? method.slice(5) : method;
}

export async function render(app, panel) {
  const userFilter = h("select", { id: "logins-user" }, h("option", { value: "", text: t("Everyone") }));
  for (const user of app.state.users.active().filter((u) => !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name))) {
    userFilter.append(h("option", { value: String(user.user_id), text: user.full_name }));
  }
  const body = h("tbody");
  const table = h("table", { class: "settings-table", id: "logins-table" },
    h("thead", {}, h("tr", {}, [t("When"), t("Who"), t("Method"), t("Through"), t("Address"), t("Browser or app")].map((text) => h("th", { scope: "col", text })))),
    body);
  const more = h("button", { type: "button", text: t("Older sign-ins"), hidden: true });
  let oldest = null;
  const load = async (reset) => {
    if (reset) {
      clear(body);
      oldest = null;
    }
    const params = { limit: 50 };
    if (userFilter.value) params.user_id = Number(userFilter.value);
    if (oldest !== null) params.before_id = oldest;
    const data = await submit(app, () => app.api.get("/realm/logins", params), "");
    const logins = (data && data.logins) || [];
    for (const row of logins) {
      const actor = row.acting_user_id ? t("by {name}", { name: app.state.users.name(row.acting_user_id) }) : "";
      const channel = CHANNELS[row.channel] ? CHANNELS[row.channel]() : row.channel;
      body.append(h("tr", {},
        h("td", { text: formatDateTime(row.timestamp) }),
        h("td", { text: app.state.users.name(row.user_id) }),
        h("td", { text: methodLabel(row.method) }),
        h("td", { text: actor ? `${channel} (${actor})` : channel }),
        h("td", { text: row.ip_address }),
        h("td", { class: "user-agent", text: row.user_agent })));
      oldest = row.id;
    }
    if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: "6", text: t("No sign-ins yet.") })));
    more.hidden = logins.length < params.limit;
  };
  userFilter.addEventListener("change", () => load(true));
  more.addEventListener("click", () => load(false));
  panel.append(h("h2", { text: t("Sign-in log") }),
    h("p", { text: t("Every sign-in to the organization, newest first, and the changes administrators made to someone's sign-in.") }),
    h("label", { for: "logins-user", text: t("Show") }), userFilter, table, more);
  await load(true);
}
