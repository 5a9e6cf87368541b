// The Inbox (unread conversations) and Recent conversations views, shown in the centre in
// place of the feed.

import { narrowToHash } from "../narrow.js";
import { topicCountKey } from "../store/unread.js";
import { t } from "../i18n.js";
import { h, clear, formatDay, formatTime, channelRef } from "./dom.js";
import { confirmMarkAllRead, openTopicMenu } from "./menus.js";

// Inbox channels folded by the reader, kept for the page's life.
const collapsed = new Set();

function topicMenuButton(app, c, label) {
  return h("button", { type: "button", class: "icon-button topic-menu-button", "aria-label": t("Actions for topic {topic}", { topic: label }), "aria-haspopup": "menu", text: "⋮",
    onclick: (event) => openTopicMenu(app, event.currentTarget, c.stream_id, c.topic) });
}

function conversationTerms(entry) {
  return entry.type === "stream"
    ? [{ operator: "channel", operand: entry.stream_id, negated: false }, { operator: "topic", operand: entry.topic, negated: false }]
    : [{ operator: "dm", operand: entry.dm.split(",").map(Number), negated: false }];
}

export function renderInbox(app, root) {
  const { state } = app;
  // Muted conversations stay out of the Inbox, as they stay out of the counts.
  const conversations = state.unread.conversations().filter((c) => c.type !== "stream" || !state.subs.isTopicMuted(c.stream_id, c.topic));
  const rows = [];
  // Direct messages come first, as in Zulip's Inbox, then the channels.
  const byChannel = new Map(conversations.some((c) => c.type !== "stream") ? [["dm", []]] : []);
  for (const c of conversations) {
    const key = c.type === "stream" ? c.stream_id : "dm";
    if (!byChannel.has(key)) byChannel.set(key, []);
    byChannel.get(key).push(c);
  }
  for (const [key, items] of byChannel) {
    const title = key === "dm" ? t("Direct messages") : channelRef(state.subs.name(key));
    const total = items.reduce((n, c) => n + c.count, 0);
    const folded = collapsed.has(key);
    rows.push(h("h2", { class: "inbox-heading" },
      h("button", { type: "button", class: "inbox-fold", "aria-expanded": String(!folded), onclick: () => {
        if (folded) collapsed.delete(key);
        else collapsed.add(key);
        renderInbox(app, root);
      } }, h("span", { class: "fold-mark", "aria-hidden": "true", text: folded ? "▸" : "▾" }), title),
      h("span", { class: "badge", text: String(total) })));
    if (folded) continue;
    const list = h("ul", { class: "inbox-list" });
    for (const c of items) {
      const label = c.type === "stream" ? c.topic || t("general chat") : c.dm.split(",").map((id) => state.users.name(Number(id))).join(", ");
      list.append(h("li", { class: "inbox-row" }, h("a", { href: narrowToHash(conversationTerms(c), app.lookup), class: "inbox-link" },
        h("span", { text: label }), h("span", { class: "badge", "aria-label": t("{n} unread", { n: c.count }), text: String(c.count) })),
        c.type === "stream" ? topicMenuButton(app, c, label) : null));
    }
    rows.push(list);
  }
  if (!rows.length) rows.push(h("p", { class: "feed-empty", text: t("You have no unread messages. 🎉") }));
  else rows.unshift(h("div", { class: "overview-tools" }, h("button", { type: "button", class: "link-button", text: t("Mark all as read"), onclick: () => confirmMarkAllRead(app) })));
  clear(root).append(h("div", { class: "overview" }, ...rows));
}

// Recent conversations come from the newest messages the server has for us.
// Recent conversations' filters, kept for the page's life.
const recentFilters = { unread: false, participated: false, muted: false };

// Keyboard navigation of Recent conversations, as in Zulip: ↓/j and ↑/k move the focused
// row (one row is in the tab order, the others are reached by the keys), Enter opens it.
// The focused conversation is remembered by key, so the table's refreshes keep it.
let recentFocusKey = null;

function recentRows(root = document) {
  return [...root.querySelectorAll(".recent-table tbody tr[data-key]")];
}

function focusRow(rows, row, { scroll = true } = {}) {
  for (const r of rows) r.tabIndex = r === row ? 0 : -1;
  recentFocusKey = row.dataset.key;
  row.focus({ preventScroll: !scroll });
  if (scroll) row.scrollIntoView({ block: "nearest" });
}

// Moves the focus `step` rows (the first row when none has it); false without a table.
export function moveRecentFocus(step) {
  const rows = recentRows();
  if (!rows.length) return false;
  const at = rows.indexOf(document.activeElement && document.activeElement.closest ? document.activeElement.closest("tr[data-key]") : null);
  focusRow(rows, rows[at < 0 ? 0 : Math.max(0, Math.min(rows.length - 1, at + step))]);
  return true;
}

function onRecentKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const row = event.target.closest("tr[data-key]");
  if (!row) return;
  const step = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1 }[event.key];
  if (step) {
    event.preventDefault();
    event.stopPropagation();
    moveRecentFocus(step);
  } else if (event.key === "Enter" && event.target === row) {
    event.preventDefault();
    event.stopPropagation();
    row.querySelector("a[href]").click();
  }
}

function typing(el) {
  return el instanceof HTMLElement && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

export async function renderRecent(app, root, { quiet = false } = {}) {
  if (!quiet) clear(root).append(h("p", { class: "feed-empty", text: t("Loading…") }));
  let messages = [];
  try {
    const data = await app.api.get("/messages", { anchor: "newest", num_before: 300, num_after: 0, narrow: [], apply_markdown: false });
    messages = data.messages || [];
  } catch (error) {
    app.showError(error);
  }
  const { state } = app;
  const seen = new Map();
  for (const m of messages.reverse()) {
    state.users.learn(m);
    const key = m.type === "stream" ? `s${m.stream_id}:${m.subject.toLowerCase()}` : "d" + m.display_recipient.map((u) => u.id).sort((a, b) => a - b).join(",");
    if (seen.has(key)) {
      seen.get(key).senders.add(m.sender_id);
      continue;
    }
    const entry = m.type === "stream"
      ? { type: "stream", stream_id: m.stream_id, topic: m.subject }
      : { type: "private", dm: m.display_recipient.map((u) => u.id).filter((id) => id !== state.myId).join(",") || String(state.myId) };
    seen.set(key, { ...entry, last: m.timestamp, senders: new Set([m.sender_id]) });
  }
  const table = h("table", { class: "recent-table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: t("Channel") }), h("th", { scope: "col", text: t("Topic") }), h("th", { scope: "col", text: t("Participants") }), h("th", { scope: "col", text: t("Last message") }))));
  const body = h("tbody");
  const counts = app.counts();
  let shown = 0;
  for (const c of seen.values()) {
    const unread = c.type === "stream" ? counts.byTopic.get(topicCountKey(c.stream_id, c.topic)) : counts.byDm.get(c.dm);
    const muted = c.type === "stream" && state.subs.isTopicMuted(c.stream_id, c.topic);
    if ((muted && !recentFilters.muted) || (recentFilters.unread && !unread) || (recentFilters.participated && !c.senders.has(state.myId))) continue;
    shown += 1;
    const where = c.type === "stream" ? channelRef(state.subs.name(c.stream_id)) : t("Direct message");
    const label = c.type === "stream" ? c.topic || t("general chat") : c.dm.split(",").map((id) => state.users.name(Number(id))).join(", ");
    const key = c.type === "stream" ? `s${c.stream_id}:${c.topic.toLowerCase()}` : `d${c.dm}`;
    body.append(h("tr", { class: muted ? "muted" : "", tabindex: "-1", dataset: { key }, onfocusin: () => { recentFocusKey = key; } },
      h("td", {}, where),
      h("td", {}, h("a", { href: narrowToHash(conversationTerms(c), app.lookup), text: label }),
        unread ? h("span", { class: "badge", "aria-label": t("{n} unread", { n: unread }), text: String(unread) }) : null),
      h("td", { text: [...c.senders].map((id) => state.users.name(id)).join(", ") }),
      h("td", { text: `${formatDay(c.last)} ${formatTime(c.last)}` })));
  }
  table.append(body);
  table.addEventListener("keydown", onRecentKey);
  // A refresh while a row had the focus gives it back to the same conversation.
  const hadFocus = Boolean(document.activeElement && root.contains(document.activeElement) && document.activeElement.closest("tr[data-key]"));
  const filter = (name, label) => h("label", { class: "recent-filter" },
    h("input", { type: "checkbox", checked: recentFilters[name], onchange: (event) => {
      recentFilters[name] = event.target.checked;
      renderRecent(app, root, { quiet: true });
    } }), label);
  const filters = h("div", { class: "overview-tools", role: "group", "aria-label": t("Filters") },
    filter("unread", t("Unread")), filter("participated", t("Participated")), filter("muted", t("Include muted")));
  const empty = seen.size ? t("No conversations match these filters.") : t("No conversations yet.");
  clear(root).append(h("div", { class: "overview" }, filters, shown ? table : h("p", { class: "feed-empty", text: empty })));
  const rows = recentRows(root);
  const row = rows.find((r) => r.dataset.key === recentFocusKey) || rows[0];
  if (!row) return;
  row.tabIndex = 0;
  // Opening the view puts the focus on the table, unless someone is typing elsewhere.
  if (hadFocus || (!quiet && !typing(document.activeElement))) focusRow(rows, row, { scroll: !quiet });
}
