// The right sidebar: people with a presence dot; a click opens the DM conversation.

import { narrowToHash } from "../narrow.js";
import { N_, t, tn } from "../i18n.js";
import { h, clear, avatar, renderAfterPress, statusEmoji } from "./dom.js";
import { skipOffscreenRows } from "./sidebar.js";

const MAX_SHOWN = 300;
// The presence dot's name for screen readers and the row's tooltip.
const STATUS_NAMES = { active: N_("Active"), idle: N_("Idle"), offline: N_("Offline") };

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
    skipOffscreenRows("#right-sidebar .user-list > li.user", 30);
    // Until the people are known (the first /register, on a slow network).
    this.list.setAttribute("aria-busy", "true");
    this.list.append(h("li", { class: "side-empty", text: t("Loading…") }));
  }

  build() {
    const { state } = this.app;
    if (!state.users.complete) return;
    this.list.removeAttribute("aria-busy");
    const q = this.filter.value.trim().toLowerCase();
    const now = state.presence.now();
    // active() is sorted by name: taking each person into the bucket of their status keeps
    // that order within each, with no sort of thousands of people per presence change.
    const buckets = { active: [], idle: [], offline: [] };
    let matching = 0;
    for (const user of state.users.active()) {
      if (user.is_bot || (q && !user.full_name.toLowerCase().includes(q))) continue;
      matching += 1;
      const status = state.presence.status(user.user_id, now);
      const bucket = buckets[status];
      if (bucket.length < MAX_SHOWN) bucket.push({ user, status });
    }
    // Large organizations: the first few hundred (the active ones first); the filter finds the rest.
    const shown = [...buckets.active, ...buckets.idle, ...buckets.offline].slice(0, MAX_SHOWN);
    const items = shown.map(({ user, status }) =>
      h("li", { class: `user status-${status}` },
        h("a", { href: narrowToHash([{ operator: "dm", operand: [user.user_id], negated: false }], this.app.lookup), class: "user-link", title: `${user.full_name} (${t(STATUS_NAMES[status])})` },
          avatar(user, "small"),
          h("span", { class: `presence-dot ${status}`, role: "img", "aria-label": t(STATUS_NAMES[status]) }),
          h("span", { class: "user-name", text: user.user_id === state.myId ? t("{name} (you)", { name: user.full_name }) : user.full_name }),
          statusEmoji(state, user.user_id),
          state.statuses.get(user.user_id)?.status_text ? h("span", { class: "user-status-text", text: state.statuses.get(user.user_id).status_text }) : null),
        h("button", { type: "button", class: "icon-button user-card-button", "aria-label": t("Profile of {name}", { name: user.full_name }), text: "ⓘ",
          onclick: (event) => {
            const button = event.currentTarget;
            import("./profile.js").then((m) => m.openProfile(this.app, user.user_id, button));
          } })));
    if (matching > shown.length) items.push(h("li", { class: "side-empty", text: tn("{n} more: use the filter", "{n} more: use the filter", matching - shown.length) }));
    clear(this.list).append(...items);
  }
}
