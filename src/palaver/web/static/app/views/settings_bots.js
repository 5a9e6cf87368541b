// Settings: bots. Administrators see every bot of the organization, others their own
// (realm_bots in the register state, kept current by realm_bot events). Those the
// organization allows create bots here: generic and outgoing-webhook bots need
// can_create_bots_group, incoming-webhook bots can_create_write_only_bots_group too.
// Whoever sees a bot here manages it: changes its avatar (PATCH /bots/{id} with the
// picture as multipart) and gives it to another owner (bot_owner_id).

import { t } from "../i18n.js";
import { avatar, clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { downloadLink, holds, isAdmin, keepFocus, readOnlyNote, zuliprc } from "./settings_kit.js";

const GENERIC = 1;
const INCOMING = 2;
const OUTGOING = 3;

function typeName(type) {
  return { 1: t("Generic bot"), 2: t("Incoming webhook"), 3: t("Outgoing webhook"), 4: t("Embedded bot") }[type] || String(type);
}

function allowedTypes(app) {
  const realm = app.state.realm;
  if (holds(app, realm.realm_can_create_bots_group)) return [GENERIC, INCOMING, OUTGOING];
  if (holds(app, realm.realm_can_create_write_only_bots_group)) return [INCOMING];
  return [];
}

// The people who may own a bot: active humans, by name.
function ownerSelect(app, bot) {
  const people = app.state.users.active().filter((u) => !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
  const select = h("select", { id: `bot-owner-${bot.user_id}`, "aria-label": t("Owner of {name}", { name: bot.full_name }) });
  if (!bot.owner_id) select.append(h("option", { value: "", text: t("No owner"), selected: true, disabled: true }));
  for (const person of people) select.append(h("option", { value: String(person.user_id), text: person.full_name, selected: person.user_id === bot.owner_id }));
  select.addEventListener("change", async () => {
    const owner = Number(select.value);
    // One who is not an administrator no longer sees a bot given away.
    if (!isAdmin(app) && owner !== app.state.myId && !window.confirm(t("Give {name} to {owner}? You will no longer manage it.", { name: bot.full_name, owner: app.state.users.name(owner) }))) {
      select.value = bot.owner_id ? String(bot.owner_id) : "";
      return;
    }
    const done = await submit(app, () => app.api.patch(`/bots/${bot.user_id}`, { bot_owner_id: owner }), t("Owner changed"));
    if (done === null) select.value = bot.owner_id ? String(bot.owner_id) : "";
  });
  return select;
}

// A file chooser that uploads the bot's new avatar as soon as a picture is chosen.
function avatarChooser(bot, app) {
  const input = h("input", { type: "file", id: `bot-avatar-${bot.user_id}`, class: "visually-hidden", accept: "image/png,image/jpeg,image/gif,image/webp",
    "aria-label": t("Change avatar of {name}", { name: bot.full_name }) });
  input.addEventListener("change", async () => {
    const picture = input.files[0];
    if (!picture) return;
    const body = new FormData();
    body.append("file", picture, picture.name);
    await submit(app, () => app.api.request("PATCH", `/bots/${bot.user_id}`, null, { body }), t("Avatar changed"));
    input.value = "";
  });
  return h("label", { class: "button-like" }, t("Change avatar"), input);
}

// `revealed`: the bots whose key is on show, kept across redraws (a regenerated key arrives
// as a realm_bot update and shows in the redrawn row).
function botRow(app, bot, revealed) {
  const keyBox = h("div", { class: "bot-key", "aria-live": "polite" });
  const showKey = (key) => {
    revealed.add(bot.user_id);
    clear(keyBox).append(
      h("code", { class: "api-key", text: key }),
      downloadLink("zuliprc", zuliprc(bot.email, key), t("Download zuliprc")));
  };
  const owner = bot.owner_id ? app.state.users.name(bot.owner_id) : "";
  const row = h("li", { class: "bot-row", dataset: { botId: String(bot.user_id) } },
    avatar({ full_name: bot.full_name, avatar_url: bot.avatar_url }),
    h("div", { class: "bot-info" },
      h("strong", { class: "bot-name", text: bot.full_name }),
      h("span", { class: "hint", text: bot.email }),
      h("span", { class: "hint bot-owner", text: owner ? t("{type}, owned by {owner}", { type: typeName(bot.bot_type), owner }) : typeName(bot.bot_type) }),
      keyBox),
    h("div", { class: "bot-actions" },
      h("label", { class: "bot-owner-field" }, h("span", { class: "hint", text: t("Owner") }), ownerSelect(app, bot)),
      avatarChooser(bot, app),
      h("button", { type: "button", text: t("Show API key"), "aria-label": t("Show API key of {name}", { name: bot.full_name }), onclick: () => showKey(bot.api_key) }),
      h("button", { type: "button", text: t("Regenerate API key"), "aria-label": t("Regenerate API key of {name}", { name: bot.full_name }), onclick: async () => {
        if (!window.confirm(t("Regenerate the API key of {name}? Programs using the old key stop working.", { name: bot.full_name }))) return;
        const data = await submit(app, () => app.api.post(`/bots/${bot.user_id}/api_key/regenerate`), t("API key regenerated"));
        if (data) showKey(data.api_key);
      } }),
      h("button", { type: "button", class: "danger", text: t("Deactivate"), "aria-label": t("Deactivate {name}", { name: bot.full_name }), onclick: async () => {
        if (!window.confirm(t("Deactivate {name}?", { name: bot.full_name }))) return;
        await submit(app, () => app.api.del(`/bots/${bot.user_id}`), t("Bot deactivated"));
      } })));
  if (revealed.has(bot.user_id)) showKey(bot.api_key);
  return row;
}

function createForm(app, types) {
  const name = h("input", { type: "text", required: true, maxlength: 60 });
  const shortName = h("input", { type: "text", required: true, maxlength: 40, pattern: "[A-Za-z0-9_.-]+", placeholder: "build_bot" });
  const type = h("select", {}, types.map((value) => h("option", { value: String(value), text: typeName(value) })));
  const payloadUrl = h("input", { type: "url", placeholder: "https://example.com/hook" });
  const iface = h("select", {}, h("option", { value: "1", text: t("Zulip format") }), h("option", { value: "2", text: t("Slack format") }));
  const outgoing = h("div", { class: "bot-outgoing", hidden: true },
    ...field("bot-payload-url", t("Endpoint URL"), payloadUrl), ...field("bot-interface", t("Outgoing webhook message format"), iface));
  type.addEventListener("change", () => {
    outgoing.hidden = Number(type.value) !== OUTGOING;
    payloadUrl.required = !outgoing.hidden;
  });
  const result = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "bot-create" },
    ...field("bot-full-name", t("Bot name"), name),
    ...field("bot-short-name", t("Bot email (the part before -bot@)"), shortName),
    ...field("bot-type", t("Bot type"), type),
    outgoing,
    h("button", { type: "submit", class: "primary", text: t("Create bot") }), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const botType = Number(type.value);
    const params = { full_name: name.value.trim(), short_name: shortName.value.trim(), bot_type: botType };
    if (botType === OUTGOING) Object.assign(params, { payload_url: JSON.stringify(payloadUrl.value.trim()), interface_type: Number(iface.value) });
    const made = await submit(app, () => app.api.post("/bots", params), t("Bot created"));
    if (made) {
      form.reset();
      outgoing.hidden = true;
    }
  });
  return form;
}

export function render(app, panel) {
  const list = h("ul", { class: "bot-list" });
  const revealed = new Set();
  // Deactivated bots, which administrators may bring back.
  const inactive = h("ul", { class: "bot-list" });
  const inactiveSection = h("section", { hidden: true }, h("h3", { text: t("Deactivated bots") }), inactive);
  const draw = () => keepFocus(panel, () => {
    const all = [...(app.state.realm.realm_bots || [])].sort((a, b) => a.full_name.localeCompare(b.full_name));
    const bots = all.filter((b) => b.is_active !== false);
    clear(list).append(...bots.map((bot) => botRow(app, bot, revealed)));
    if (!bots.length) list.append(h("li", { class: "side-empty", text: t("No bots yet.") }));
    const gone = isAdmin(app) ? all.filter((b) => b.is_active === false) : [];
    inactiveSection.hidden = !gone.length;
    clear(inactive).append(...gone.map((bot) => h("li", { class: "bot-row inactive" },
      h("div", { class: "bot-info" }, h("strong", { text: bot.full_name }), h("span", { class: "hint", text: bot.email })),
      h("button", { type: "button", text: t("Reactivate"), "aria-label": t("Reactivate {name}", { name: bot.full_name }),
        onclick: () => submit(app, () => app.api.post(`/users/${bot.user_id}/reactivate`), t("Bot reactivated")) }))));
  });
  const types = allowedTypes(app);
  panel.append(h("h2", { text: t("Bots") }), list, inactiveSection, h("h3", { text: t("Add a bot") }),
    types.length ? createForm(app, types) : readOnlyNote(t("The organization does not let you create bots.")));
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["bots"];
}
