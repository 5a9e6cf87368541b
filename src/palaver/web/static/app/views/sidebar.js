// The left sidebar: special views, subscribed channels (with the current channel's topics)
// and direct-message conversations, each with its unread count. Everything is a link to a
// narrow's hash, so keyboard users, middle-click and the Back button all work.

import { narrowToHash } from "../narrow.js";
import { topicCountKey } from "../store/unread.js";
import { t } from "../i18n.js";
import { FOLLOWED } from "../store/subscriptions.js";
import { h, clear, renderAfterPress } from "./dom.js";
import { confirmMarkAllRead, openChannelMenu, openTopicMenu } from "./menus.js";

const TOPICS_SHOWN = 8;

function badge(count, label) {
  return count ? h("span", { class: "badge", "aria-label": `${count} ${label}`, text: count > 999 ? "999+" : String(count) }) : null;
}

function menuButton(kind, streamId, topic, label) {
  return h("button", { type: "button", class: "icon-button side-menu-button", dataset: { menu: kind, streamId, ...(topic === null ? {} : { topic }) }, "aria-label": label, "aria-haspopup": "menu", title: label, text: "⋮" });
}

export class Sidebar {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.showAllTopics = false;
    this.render = renderAfterPress(root, () => this.build());
    root.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-menu]");
      if (!button) return;
      const streamId = Number(button.dataset.streamId);
      if (button.dataset.menu === "topic") openTopicMenu(this.app, button, streamId, button.dataset.topic);
      else openChannelMenu(this.app, button, streamId);
    });
  }

  build() {
    const { state } = this.app;
    const counts = this.app.counts();
    const current = this.app.current;
    const lookup = this.app.lookup;
    // The current view as the sidebar's own links write it, whatever form the address has
    // ("#narrow/channel/quiet-corner" is the link "#narrow/channel/12-quiet-corner").
    const currentHash = decodeURIComponent(current.view === "narrow" ? narrowToHash(current.terms, lookup) : `#${current.view}`);
    const isCurrent = (hash) => (decodeURIComponent(hash) === currentHash ? "page" : undefined);
    const link = (hash, label, count, extra = {}, mutedCount = 0) =>
      h("a", { href: hash, class: "side-link", "aria-current": isCurrent(hash), ...extra }, h("span", { class: "side-label", text: label }),
        count ? badge(count, "unread") : mutedCount ? h("span", { class: "badge muted-badge", "aria-label": t("{n} unread in muted topics", { n: mutedCount }), text: String(mutedCount) }) : null);
    const followedCount = state.subs.followed().reduce((n, f) => n + (counts.byTopic.get(topicCountKey(f.stream_id, f.topic)) || 0), 0);

    const views = h("ul", { class: "side-list views" },
      h("li", {}, link("#inbox", "Inbox", counts.total)),
      h("li", {}, link("#recent", "Recent conversations", 0)),
      h("li", {}, link("#narrow/is/mentioned", "Mentions", counts.mentions)),
      h("li", {}, link("#narrow/is/followed", t("Followed topics"), followedCount)),
      h("li", {}, link("#narrow/is/starred", "Starred", 0)),
      h("li", {}, link("#feed", "All messages", 0)),
      h("li", {}, h("button", { type: "button", class: "side-link side-button", onclick: () => import("./groups_view.js").then((m) => m.openGroups(this.app)) },
        h("span", { class: "side-label", text: t("User groups") }))));

    const currentChannel = current.terms.find((t) => t.operator === "channel" && !t.negated);
    const currentTopic = current.terms.find((t) => t.operator === "topic" && !t.negated);
    const channels = h("ul", { class: "side-list channels" });
    for (const sub of state.subs.sorted()) {
      const terms = [{ operator: "channel", operand: sub.stream_id, negated: false }];
      const item = h("li", { class: "side-item" + (sub.is_muted ? " muted" : "") });
      const a = link(narrowToHash(terms, lookup), sub.name, counts.byStream.get(sub.stream_id) || 0, { class: "side-link channel-link" }, counts.mutedByStream.get(sub.stream_id) || 0);
      const swatch = h("span", { class: "channel-swatch", "aria-hidden": "true", text: sub.invite_only ? "🔒" : "#" });
      if (sub.color) swatch.style.color = sub.color;
      a.prepend(swatch);
      item.append(h("div", { class: "side-row" }, a, menuButton("channel", sub.stream_id, null, t("Actions for #{name}", { name: sub.name }))));
      if (currentChannel && currentChannel.operand === sub.stream_id) {
        item.append(this.topicList(sub.stream_id, counts, currentTopic ? currentTopic.operand : null, link));
      }
      channels.append(item);
    }

    const dms = h("ul", { class: "side-list dms" });
    const recent = [...state.recentDms.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20);
    for (const [key] of recent) {
      const ids = key.split(",").map(Number);
      const names = ids.map((id) => (id === state.myId ? "You" : state.users.name(id))).join(", ");
      dms.append(h("li", {}, link(narrowToHash([{ operator: "dm", operand: ids, negated: false }], lookup), names, counts.byDm.get(key) || 0)));
    }
    if (!recent.length) dms.append(h("li", { class: "side-empty", text: t("No conversations yet") }));

    clear(this.root).append(
      views,
      ...(counts.total || counts.mutedByStream.size ? [h("button", { type: "button", class: "link-button mark-all-read", text: t("Mark all as read"), onclick: () => confirmMarkAllRead(this.app) })] : []),
      h("div", { class: "side-heading" },
        h("h2", { id: "channels-heading", text: t("Channels") }),
        h("button", { type: "button", class: "icon-button", "aria-label": t("Browse and create channels"), title: t("Browse channels"), text: "+", onclick: () => this.app.openSettings("channels") })),
      channels,
      h("div", { class: "side-heading" },
        h("h2", { text: t("Direct messages") }),
        h("button", { type: "button", class: "icon-button", "aria-label": t("New direct message"), title: t("New direct message (x)"), text: "+", onclick: () => this.app.compose.start("dm") })),
      dms);
  }

  topicList(streamId, counts, currentTopic, link) {
    const { state } = this.app;
    this.app.ensureTopics(streamId);
    const topics = state.subs.topicsOf(streamId);
    const list = h("ul", { class: "side-list topics", "aria-label": t("Topics") });
    const shown = this.showAllTopics ? topics : topics.filter((t, i) => i < TOPICS_SHOWN || counts.byTopic.get(topicCountKey(streamId, t.name)) || (currentTopic && t.name.toLowerCase() === currentTopic.toLowerCase()));
    for (const topic of shown) {
      const terms = [{ operator: "channel", operand: streamId, negated: false }, { operator: "topic", operand: topic.name, negated: false }];
      const label = topic.name || state.realm.realm_empty_topic_display_name || "general chat";
      const muted = state.subs.isTopicMuted(streamId, topic.name);
      const count = counts.byTopic.get(topicCountKey(streamId, topic.name)) || 0;
      const followed = state.subs.policy(streamId, topic.name) === FOLLOWED;
      const a = link(narrowToHash(terms, this.app.lookup), label, muted ? 0 : count, { class: "side-link topic-link" }, muted ? count : 0);
      if (followed) a.querySelector(".side-label").append(h("span", { class: "topic-mark", "aria-label": t("followed"), title: t("You follow this topic"), text: " ◉" }));
      list.append(h("li", { class: "side-item" + (muted ? " muted" : "") }, h("div", { class: "side-row" }, a, menuButton("topic", streamId, topic.name, t("Actions for topic {topic}", { topic: label })))));
    }
    if (topics.length > shown.length || this.showAllTopics) {
      list.append(h("li", {}, h("button", {
        type: "button", class: "link-button", text: this.showAllTopics ? "Fewer topics" : "More topics",
        onclick: () => {
          this.showAllTopics = !this.showAllTopics;
          this.render();
        },
      })));
    }
    return list;
  }
}
