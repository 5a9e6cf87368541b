// Organization life in settings: invitations (by email with a role and channels, reusable
// links; list, resend, revoke) and custom emoji (upload, delete).

import { t } from "../i18n.js";
import { ROLE_NAMES } from "../store/users.js";
import { h, clear, formatDateTime, toast } from "./dom.js";
import { field, submit } from "./settings.js";

const ROLES = [400, 600, 300, 200, 100];

function roleSelect(id, app) {
  const mine = (app.state.users.get(app.state.myId) || {}).role || 400;
  // One can invite as a role no higher than one's own.
  return h("select", { id }, ROLES.filter((role) => role >= mine).map((role) => h("option", { value: String(role), text: t(ROLE_NAMES[role]) })));
}

function channelChoices(app, prefix) {
  const box = h("fieldset", { class: "channel-choices" }, h("legend", { text: t("Channels they join") }));
  for (const sub of app.state.subs.sorted()) {
    const id = `${prefix}-${sub.stream_id}`;
    box.append(h("label", { class: "check", for: id }, h("input", { type: "checkbox", id, value: String(sub.stream_id) }), sub.name));
  }
  return box;
}

function checked(box) {
  return [...box.querySelectorAll("input:checked")].map((input) => Number(input.value));
}

export function renderInvitations(app, panel) {
  const list = h("div", {});
  const draw = async () => {
    let invites = [];
    try {
      invites = (await app.api.get("/invites")).invites || [];
    } catch (error) {
      clear(list).append(h("p", { text: error.message }));
      return;
    }
    const body = h("tbody");
    for (const invite of invites) {
      const revoke = h("button", { type: "button", class: "danger", text: t("Revoke"), "aria-label": t("Revoke invitation for {who}", { who: invite.email || t("link") }), onclick: async () => {
        if (await submit(app, () => app.api.del(invite.is_multiuse ? `/invites/multiuse/${invite.id}` : `/invites/${invite.id}`), t("Invitation revoked")) !== null) draw();
      } });
      const resend = invite.is_multiuse ? null : h("button", { type: "button", text: t("Resend"), onclick: () => submit(app, () => app.api.post(`/invites/${invite.id}/resend`), t("Invitation sent again")) });
      body.append(h("tr", {},
        h("td", { text: invite.is_multiuse ? t("Reusable link") : invite.email }),
        h("td", { text: t(ROLE_NAMES[invite.invited_as] || ROLE_NAMES[400]) }),
        h("td", { text: app.state.users.name(invite.invited_by_user_id) }),
        h("td", { text: invite.expiry_date ? formatDateTime(invite.expiry_date) : t("Never") }),
        h("td", {}, resend, revoke)));
    }
    clear(list).append(invites.length
      ? h("table", { class: "settings-table" }, h("thead", {}, h("tr", {}, [t("Invited"), t("Role"), t("By"), t("Expires"), ""].map((text) => h("th", { scope: "col", text })))), body)
      : h("p", { text: t("No open invitations.") }));
  };

  const emails = h("textarea", { rows: 2, required: true, placeholder: "ann@example.com, bob@example.com" });
  const role = roleSelect("invite-role", app);
  const channels = channelChoices(app, "invite-channel");
  const form = h("form", {}, ...field("invite-emails", t("Emails (separated by commas or new lines)"), emails), ...field("invite-role", t("They join as"), role), channels,
    h("button", { type: "submit", class: "primary", text: t("Send invitations") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const sent = await submit(app, () => app.api.post("/invites", { invitee_emails: emails.value, invite_as: Number(role.value), stream_ids: checked(channels) }), t("Invitations sent"));
    if (sent !== null) {
      emails.value = "";
      draw();
    }
  });

  const linkRole = roleSelect("link-role", app);
  const linkChannels = channelChoices(app, "link-channel");
  const linkOut = h("input", { type: "text", readonly: true, class: "api-key", "aria-label": t("Invitation link"), hidden: true });
  const linkForm = h("form", {}, ...field("link-role", t("They join as"), linkRole), linkChannels,
    h("button", { type: "submit", text: t("Create a reusable link") }), linkOut);
  linkForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const made = await submit(app, () => app.api.post("/invites/multiuse", { invite_as: Number(linkRole.value), stream_ids: checked(linkChannels) }), t("Link created"));
    if (made) {
      linkOut.hidden = false;
      linkOut.value = made.invite_link;
      linkOut.select();
      draw();
    }
  });
  panel.append(h("h2", { text: t("Invitations") }), h("h3", { text: t("Invite by email") }), form,
    h("h3", { text: t("Invitation link") }), linkForm, h("h3", { text: t("Open invitations") }), list);
  draw();
}

export function renderEmoji(app, panel) {
  const list = h("ul", { class: "emoji-admin" });
  const draw = () => {
    clear(list);
    const emoji = Object.values(app.state.emoji || {}).filter((e) => !e.deactivated).sort((a, b) => a.name.localeCompare(b.name));
    for (const e of emoji) {
      list.append(h("li", {},
        h("img", { src: e.source_url, alt: `:${e.name}:`, class: "emoji-img" }),
        h("code", { text: `:${e.name}:` }),
        h("span", { class: "hint", text: e.author_id ? app.state.users.name(e.author_id) : "" }),
        h("button", { type: "button", class: "danger", text: t("Delete"), "aria-label": t("Delete :{name}:", { name: e.name }), onclick: async () => {
          if (!window.confirm(t("Delete :{name}:?", { name: e.name }))) return;
          await submit(app, () => app.api.del(`/realm/emoji/${encodeURIComponent(e.name)}`), t("Emoji deleted"));
        } })));
    }
    if (!emoji.length) list.append(h("li", { class: "side-empty", text: t("No custom emoji yet.") }));
  };
  const name = h("input", { type: "text", required: true, pattern: "[a-z0-9_-]+", maxlength: 60, placeholder: "party_parrot" });
  const file = h("input", { type: "file", required: true, accept: "image/png,image/gif,image/jpeg,image/webp" });
  const form = h("form", {}, ...field("emoji-name", t("Name (lower-case letters, digits, _ and -)"), name), ...field("emoji-file", t("Image"), file),
    h("button", { type: "submit", class: "primary", text: t("Add emoji") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData();
    body.append("filename", file.files[0], file.files[0].name);
    const done = await submit(app, () => app.api.request("POST", `/realm/emoji/${encodeURIComponent(name.value.trim())}`, null, { body }), t("Emoji added"));
    if (done) form.reset();
  });
  panel.append(h("h2", { text: t("Custom emoji") }), list, h("h3", { text: t("Add an emoji") }), form);
  draw();
  // Live: the realm_emoji event replaces the table while the panel is open.
  panel.redraw = draw;
}
