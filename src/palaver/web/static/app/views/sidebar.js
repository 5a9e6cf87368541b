// The left sidebar: special views, subscribed channels (with the current channel's topics)
// and direct-message conversations, each with its unread count. Everything is a link to a
// narrow's hash, so keyboard users, middle-click and the Back button all work.

import { narrowToHash } from "../narrow.js";
import { topicCountKey } from "../store/unread.js";
import { language, t } from "../i18n.js";
import { FOLLOWED } from "../store/subscriptions.js";
import { h, clear, renderAfterPress } from "./dom.js";
import { confirmMarkAllRead, openChannelMenu, openTopicMenu } from "./menus.js";

const TOPICS_SHOWN = 8;
const FIRST_ROWS = 60;

// Rows of long lists (a thousand channels, hundreds of people) out of view are not styled,
// laid out or painted until scrolled to: each takes its last drawn height (or ``height``).
export function skipOffscreenRows(selector, height) {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(`${selector} { content-visibility: auto; contain-intrinsic-size: auto ${height}px; }`);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

function badge(count) {
  return count ? h("span", { class: "badge", "aria-label": t("{n} unread", { n: count }), text: count > 999 ? "999+" : String(count) }) : null;
}

function menuButton(kind, streamId, topic, label) {
  return h("button", { type: "button", class: "icon-button side-menu-button", dataset: { menu: kind, streamId, ...(topic === null ? {} : { topic }) }, "aria-label": label, "aria-haspopup": "menu", title: label, text: "⋮" });
}

export class Sidebar {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.showAllTopics = false;
    // Whether only the first rows are drawn, the rest waiting for the page to be idle.
    this.restPending = false;
    // stream id -> {signature, item}: the channel rows drawn last (see channelList).
    this.channelRows = new Map();
    this.channels = h("ul", { class: "side-list channels" });
    skipOffscreenRows("#left-sidebar .side-list.channels > li", 30);
    this.render = renderAfterPress(root, () => this.build());
    root.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-menu]");
      if (!button) return;
      const streamId = Number(button.dataset.streamId);
      if (button.dataset.menu === "topic") openTopicMenu(this.app, button, streamId, button.dataset.topic);
      else openChannelMenu(this.app, button, streamId);
    });
    this.buildLoading();
  }

  // Until the first /register answers (a slow network): the views, which need no state,
  // and the channel and conversation lists saying they are loading.
  buildLoading() {
    const views = [["#inbox", t("Inbox")], ["#recent", t("Recent conversations")], ["#narrow/is/mentioned", t("Mentions")], ["#narrow/is/followed", t("Followed topics")], ["#narrow/is/starred", t("Starred")], ["#feed", t("All messages")]];
    const loading = () => h("li", { class: "side-empty", text: t("Loading…") });
    this.channels.setAttribute("aria-busy", "true");
    this.channels.replaceChildren(loading());
    clear(this.root).append(
      h("ul", { class: "side-list views" }, ...views.map(([hash, label]) => h("li", {}, h("a", { href: hash, class: "side-link" }, h("span", { class: "side-label", text: label }))))),
      h("div", { class: "side-heading" }, h("h2", { id: "channels-heading", text: t("Channels") })),
      this.channels,
      h("div", { class: "side-heading" }, h("h2", { text: t("Direct messages") })),
      h("ul", { class: "side-list dms", "aria-busy": "true" }, loading()));
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
        count ? badge(count) : mutedCount ? h("span", { class: "badge muted-badge", "aria-label": t("{n} unread in muted topics", { n: mutedCount }), text: String(mutedCount) }) : null);
    const followedCount = state.subs.followed().reduce((n, f) => n + (counts.byTopic.get(topicCountKey(f.stream_id, f.topic)) || 0), 0);

    const views = h("ul", { class: "side-list views" },
      h("li", {}, link("#inbox", t("Inbox"), counts.total)),
      h("li", {}, link("#recent", t("Recent conversations"), 0)),
      h("li", {}, link("#narrow/is/mentioned", t("Mentions"), counts.mentions)),
      h("li", {}, link("#narrow/is/followed", t("Followed topics"), followedCount)),
      h("li", {}, link("#narrow/is/starred", t("Starred"), 0)),
      h("li", {}, link("#feed", t("All messages"), 0)),
      h("li", {}, h("button", { type: "button", class: "side-link side-button", onclick: () => import("./groups_view.js").then((m) => m.openGroups(this.app)) },
        h("span", { class: "side-label", text: t("User groups") }))));

    const currentChannel = current.terms.find((t) => t.operator === "channel" && !t.negated);
    const currentTopic = current.terms.find((t) => t.operator === "topic" && !t.negated);
    const channels = this.channelList(counts, link, isCurrent, currentChannel ? currentChannel.operand : null, currentTopic ? currentTopic.operand : null);

    const dms = h("ul", { class: "side-list dms" });
    const recent = [...state.recentDms.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20);
    // Named once the user list is there (main.js loadUsers draws the sidebar again).
    if (!state.users.complete && recent.length) dms.append(h("li", { class: "side-empty", text: t("Loading…") }));
    for (const [key] of state.users.complete ? recent : []) {
      const ids = key.split(",").map(Number);
      const names = ids.map((id) => (id === state.myId ? t("You") : state.users.name(id))).join(", ");
      dms.append(h("li", {}, link(narrowToHash([{ operator: "dm", operand: ids, negated: false }], lookup), names, counts.byDm.get(key) || 0)));
    }
    if (!recent.length) dms.append(h("li", { class: "side-empty", text: t("No conversations yet") }));

    const before = [
      views,
      ...(counts.total || counts.mutedByStream.size ? [h("button", { type: "button", class: "link-button mark-all-read", text: t("Mark all as read"), onclick: () => confirmMarkAllRead(this.app) })] : []),
      h("div", { class: "side-heading" },
        h("h2", { id: "channels-heading", text: t("Channels") }),
        h("button", { type: "button", class: "icon-button", "aria-label": t("Browse and create channels"), title: t("Browse channels"), text: "+", onclick: () => this.app.openSettings("channels") })),
    ];
    const after = [
      h("div", { class: "side-heading" },
        h("h2", { text: t("Direct messages") }),
        h("button", { type: "button", class: "icon-button", "aria-label": t("New direct message"), title: t("New direct message (x)"), text: "+", onclick: () => this.app.compose.start("dm") })),
      dms,
    ];
    // The channel list stays where it is: what is around it is drawn anew.
    if (channels.parentNode === this.root) {
      for (const child of [...this.root.children]) if (child !== channels) child.remove();
      channels.before(...before);
      channels.after(...after);
    } else {
      clear(this.root).append(...before, channels, ...after);
    }
  }

  // The subscribed channels, one row each. A thousand rows are not rebuilt for every count
  // that changes: a row is kept while what it shows (its signature) is the same, and only
  // the current channel's row, which holds its topics, is always drawn anew.
  channelList(counts, link, isCurrent, currentStreamId, currentTopic) {
    const { state } = this.app;
    const lookup = this.app.lookup;
    const rows = new Map();
    const items = [];
    // The first time, the rows a screen shows: the rest once the browser has drawn them and
    // is idle. Until then every build (the login draws the sidebar several times) keeps to
    // those rows, so the whole list is built once, after the feed is on screen.
    let subs = state.subs.sorted();
    if (!this.channelRows.size && subs.length > FIRST_ROWS && !this.restPending) {
      this.restPending = true;
      this.app.afterPaint(() => {
        this.restPending = false;
        this.render();
      });
    }
    if (this.restPending) subs = subs.slice(0, FIRST_ROWS);
    for (const sub of subs) {
      const hash = narrowToHash([{ operator: "channel", operand: sub.stream_id, negated: false }], lookup);
      const count = counts.byStream.get(sub.stream_id) || 0;
      const mutedCount = counts.mutedByStream.get(sub.stream_id) || 0;
      const current = currentStreamId === sub.stream_id;
      const signature = current ? null : [hash, sub.name, sub.color, sub.invite_only, sub.is_muted, count, mutedCount, isCurrent(hash), language()].join("\u0000");
      const known = this.channelRows.get(sub.stream_id);
      let item = known && signature !== null && known.signature === signature ? known.item : null;
      if (!item) {
        item = h("li", { class: "side-item" + (sub.is_muted ? " muted" : "") });
        const a = link(hash, sub.name, count, { class: "side-link channel-link" }, mutedCount);
        const swatch = h("span", { class: "channel-swatch", "aria-hidden": "true", text: sub.invite_only ? "🔒" : "#" });
        if (sub.color) swatch.style.color = sub.color;
        a.prepend(swatch);
        item.append(h("div", { class: "side-row" }, a, menuButton("channel", sub.stream_id, null, t("Actions for #{name}", { name: sub.name }))));
        if (current) item.append(this.topicList(sub.stream_id, counts, currentTopic, link));
      }
      rows.set(sub.stream_id, { signature, item });
      items.push(item);
    }
    this.channelRows = rows;
    const list = this.channels;
    list.removeAttribute("aria-busy");
    const kept = list.children;
    // Rows already in place stay; new rows replace the ones they redraw, and a change of
    // order or number rebuilds the list.
    const changed = [];
    let reorder = kept.length !== items.length;
    for (let i = 0; !reorder && i < items.length; i += 1) {
      if (kept[i] === items[i]) continue;
      if (items[i].parentNode) reorder = true;
      else changed.push(i);
    }
    if (reorder) list.replaceChildren(...items);
    else for (const i of changed) kept[i].replaceWith(items[i]);
    return list;
  }

  topicList(streamId, counts, currentTopic, link) {
    const { state } = this.app;
    this.app.ensureTopics(streamId);
    const topics = state.subs.topicsOf(streamId);
    const list = h("ul", { class: "side-list topics", "aria-label": t("Topics") });
    const shown = this.showAllTopics ? topics : topics.filter((t, i) => i < TOPICS_SHOWN || counts.byTopic.get(topicCountKey(streamId, t.name)) || (currentTopic && t.name.toLowerCase() === currentTopic.toLowerCase()));
    for (const topic of shown) {
      const terms = [{ operator: "channel", operand: streamId, negated: false }, { operator: "topic", operand: topic.name, negated: false }];
      const label = topic.name || state.realm.realm_empty_topic_display_name || t("general chat");
      const muted = state.subs.isTopicMuted(streamId, topic.name);
      const count = counts.byTopic.get(topicCountKey(streamId, topic.name)) || 0;
      const followed = state.subs.policy(streamId, topic.name) === FOLLOWED;
      const a = link(narrowToHash(terms, this.app.lookup), label, muted ? 0 : count, { class: "side-link topic-link" }, muted ? count : 0);
      if (followed) a.querySelector(".side-label").append(h("span", { class: "topic-mark", "aria-label": t("followed"), title: t("You follow this topic"), text: " ◉" }));
      list.append(h("li", { class: "side-item" + (muted ? " muted" : "") }, h("div", { class: "side-row" }, a, menuButton("topic", streamId, topic.name, t("Actions for topic {topic}", { topic: label })))));
    }
    if (topics.length > shown.length || this.showAllTopics) {
      list.append(h("li", {}, h("button", {
        type: "button", class: "link-button", text: this.showAllTopics ? t("Fewer topics") : t("More topics"),
        onclick: () => {
          this.showAllTopics = !this.showAllTopics;
          this.render();
        },
      })));
    }
    return list;
  }
}
