// The right sidebar: people with a presence dot; a click opens the DM conversation.

import { narrowToHash } from "../narrow.js";
import { t, tn } from "../i18n.js";
import { h, clear, avatar, renderAfterPress, statusEmoji } from "./dom.js";

const MAX_SHOWN = 300;
const ORDER = { active: 0, idle: 1, offline: 2 };

export class UserList {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.filter = h("input", { type: "search", id: "user-filter", placeholder: t("Filter people"), "aria-label": t("Filter people") });
    this.filter.addEventListener("input", () => this.render());
    this.list = h("ul", { class: "user-list", "aria-labelledby": "users-heading" });
    const setStatus = h("button", { type: "button", class: "link-button set-status", text: t("Set your status…"), onclick: () => import("./profile.js").then((m) => m.openStatusDialog(this.app)) });
    clear(root).append(h("h2", { id: "users-heading", class: "side-title", text: t("People") }), setStatus, this.filter, this.list);
    this.render = renderAfterPress(this.list, () => this.build());
  }

  build() {
    const { state } = this.app;
    const q = this.filter.value.trim().toLowerCase();
    const now = state.presence.now();
    const users = state.users.active()
      .filter((u) => !u.is_bot && (!q || u.full_name.toLowerCase().includes(q)))
      .map((u) => ({ user: u, status: state.presence.status(u.user_id, now) }))
      .sort((a, b) => ORDER[a.status] - ORDER[b.status] || a.user.full_name.localeCompare(b.user.full_name));
    // Large organizations: the first few hundred (the active ones sort first); the filter finds the rest.
    const shown = users.slice(0, MAX_SHOWN);
    const items = shown.map(({ user, status }) =>
      h("li", { class: `user status-${status}` },
        h("a", { href: narrowToHash([{ operator: "dm", operand: [user.user_id], negated: false }], this.app.lookup), class: "user-link", title: `${user.full_name} (${status})` },
          avatar(user, "small"),
          h("span", { class: `presence-dot ${status}`, role: "img", "aria-label": status }),
          h("span", { class: "user-name", text: user.full_name + (user.user_id === state.myId ? " (you)" : "") }),
          statusEmoji(state, user.user_id),
          state.statuses.get(user.user_id)?.status_text ? h("span", { class: "user-status-text", text: state.statuses.get(user.user_id).status_text }) : null),
        h("button", { type: "button", class: "icon-button user-card-button", "aria-label": t("Profile of {name}", { name: user.full_name }), text: "ⓘ",
          onclick: (event) => {
            const button = event.currentTarget;
            import("./profile.js").then((m) => m.openProfile(this.app, user.user_id, button));
          } })));
    if (users.length > shown.length) items.push(h("li", { class: "side-empty", text: tn("{n} more: use the filter", "{n} more: use the filter", users.length - shown.length) }));
    clear(this.list).append(...items);
  }
}
