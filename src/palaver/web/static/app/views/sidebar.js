// The left sidebar: special views, subscribed channels (with the current channel's topics)
// and direct-message conversations, each with its unread count. Everything is a link to a
// narrow's hash, so keyboard users, middle-click and the Back button all work.

import { narrowToHash } from "../narrow.js";
import { topicCountKey } from "../store/unread.js";
import { h, clear, renderAfterPress } from "./dom.js";

const TOPICS_SHOWN = 8;

function badge(count, label) {
  return count ? h("span", { class: "badge", "aria-label": `${count} ${label}`, text: count > 999 ? "999+" : String(count) }) : null;
}

export class Sidebar {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.showAllTopics = false;
    this.render = renderAfterPress(root, () => this.build());
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
    const link = (hash, label, count, extra = {}) =>
      h("a", { href: hash, class: "side-link", "aria-current": isCurrent(hash), ...extra }, h("span", { class: "side-label", text: label }), badge(count, "unread"));

    const views = h("ul", { class: "side-list views" },
      h("li", {}, link("#inbox", "Inbox", counts.total)),
      h("li", {}, link("#recent", "Recent conversations", 0)),
      h("li", {}, link("#narrow/is/mentioned", "Mentions", counts.mentions)),
      h("li", {}, link("#narrow/is/starred", "Starred", 0)),
      h("li", {}, link("#feed", "All messages", 0)));

    const currentChannel = current.terms.find((t) => t.operator === "channel" && !t.negated);
    const currentTopic = current.terms.find((t) => t.operator === "topic" && !t.negated);
    const channels = h("ul", { class: "side-list channels" });
    for (const sub of state.subs.sorted()) {
      const terms = [{ operator: "channel", operand: sub.stream_id, negated: false }];
      const item = h("li", { class: sub.is_muted ? "muted" : "" });
      const a = link(narrowToHash(terms, lookup), sub.name, counts.byStream.get(sub.stream_id) || 0, { class: "side-link channel-link" });
      const swatch = h("span", { class: "channel-swatch", "aria-hidden": "true", text: sub.invite_only ? "🔒" : "#" });
      if (sub.color) swatch.style.color = sub.color;
      a.prepend(swatch);
      item.append(a);
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
    if (!recent.length) dms.append(h("li", { class: "side-empty", text: "No conversations yet" }));

    clear(this.root).append(
      views,
      h("div", { class: "side-heading" },
        h("h2", { id: "channels-heading", text: "Channels" }),
        h("button", { type: "button", class: "icon-button", "aria-label": "Browse and create channels", title: "Browse channels", text: "+", onclick: () => this.app.openSettings("channels") })),
      channels,
      h("div", { class: "side-heading" },
        h("h2", { text: "Direct messages" }),
        h("button", { type: "button", class: "icon-button", "aria-label": "New direct message", title: "New direct message (x)", text: "+", onclick: () => this.app.compose.start("dm") })),
      dms);
  }

  topicList(streamId, counts, currentTopic, link) {
    const { state } = this.app;
    this.app.ensureTopics(streamId);
    const topics = state.subs.topicsOf(streamId);
    const list = h("ul", { class: "side-list topics", "aria-label": "Topics" });
    const shown = this.showAllTopics ? topics : topics.filter((t, i) => i < TOPICS_SHOWN || counts.byTopic.get(topicCountKey(streamId, t.name)) || (currentTopic && t.name.toLowerCase() === currentTopic.toLowerCase()));
    for (const topic of shown) {
      const terms = [{ operator: "channel", operand: streamId, negated: false }, { operator: "topic", operand: topic.name, negated: false }];
      const label = topic.name || state.realm.realm_empty_topic_display_name || "general chat";
      list.append(h("li", {}, link(narrowToHash(terms, this.app.lookup), label, counts.byTopic.get(topicCountKey(streamId, topic.name)) || 0, { class: "side-link topic-link" })));
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
