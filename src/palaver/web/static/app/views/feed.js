// The message feed of the current narrow: recipient bars (channel > topic, or DM people),
// messages with sender, avatar, time, rendered content, reactions and an "(edited)" marker.
// It loads history in both directions as the reader scrolls, and marks what is seen as read.

import { apiNarrow, narrowToHash, messageDmIds, isSearchNarrow } from "../narrow.js";
import { t } from "../i18n.js";
import { LIVE_LIST_KEEP, LIVE_LIST_MAX } from "../store/messages.js";
import { FOLLOWED } from "../store/subscriptions.js";
import { openTopicMenu } from "./menus.js";
import { ReadTracker } from "./reading.js";
import { widgetElement, widgetState } from "./widgets.js";

// The profile card is its own module, loaded on first use.
export function openProfile(app, userId, anchor) {
  import("./profile.js").then((m) => m.openProfile(app, userId, anchor));
}
import { h, setHtml, avatar, formatTime, formatDateTime, formatDay, emojiImage, clear, statusEmoji } from "./dom.js";

const FETCH_BATCH = 100;
const LOAD_MARGIN_PX = 400;
// Few message rows are lower than this (a continued one-line message is ~26 px at the
// default text size, 18 at a 12 px size and a tight line height): ``viewHeight / MIN_ROW_PX``
// rows fill the feed.
const MIN_ROW_PX = 18;
// A narrow drawn in part (renderOpening) is drawn whole at the first scroll or selection
// outside the part, or once the page has been quiet this long after the switch.
const REST_AFTER_MS = 300;
// Consecutive messages from one sender within this many seconds share one header.
const CONTINUE_SECONDS = 10 * 60;

function conversationKey(message, myId) {
  return message.type === "stream"
    ? `s:${message.stream_id}:${message.subject.toLowerCase()}`
    : "d:" + messageDmIds(message, myId).join(",");
}

// The GET /messages parameters for a stretch of a narrow's history.
export function messagesParams(terms, anchor, numBefore, numAfter, includeAnchor) {
  return {
    anchor: String(anchor),
    num_before: numBefore,
    num_after: numAfter,
    include_anchor: includeAnchor,
    narrow: apiNarrow(terms),
    apply_markdown: true,
    client_gravatar: false,
  };
}

// The first fetch of a narrow: around the first unread message.
// Fifty each way, as Zulip's web app: older ones load as the reader scrolls up.
export const INITIAL_FETCH = ["first_unread", FETCH_BATCH / 2, FETCH_BATCH / 2, true];

export class FeedView {
  constructor(app, scroller, container) {
    this.app = app;
    this.scroller = scroller;
    this.container = container;
    this.list = null;
    this.elements = new Map();
    this.reader = new ReadTracker(app, this);
    // The inline editor of a message being edited survives re-renders: {id, form}.
    this.editing = null;
    scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
    // The feed's height, as the browser last laid it out: reading clientHeight when a narrow
    // opens would lay out the page (the previous narrow's rows still in it) once more.
    this.viewHeight = window.innerHeight;
    new ResizeObserver(([entry]) => { this.viewHeight = entry.contentRect.height || window.innerHeight; }).observe(scroller);
    container.addEventListener("click", (event) => this.onClick(event));
  }

  get state() {
    return this.app.state;
  }

  // Opens a narrow's list: fetches around the first unread (or the given anchor) if empty.
  async open(list, anchor) {
    this.list = list;
    this.state.messages.shown = list;
    this.reader.paused = null;
    const empty = () => !list.ids.length && !(list.foundOldest && list.foundNewest);
    if (empty()) {
      this.render();
      if (list.preloading) {
        // Its first page is on its way (preload): that page, not a second request.
        this.setLoading(true);
        await list.preloading;
        // As when a fetch ends (fetchInto), whichever list is shown by then.
        this.setLoading(false);
        if (this.list !== list) return;
      }
      if (empty()) {
        if (anchor) await this.fetch(anchor, FETCH_BATCH, 50, true);
        else await this.fetch(...INITIAL_FETCH);
      }
      if (this.list !== list) return;
    }
    this.renderOpening(anchor);
    this.scrollToStart(anchor);
    // Where the part drawn was put: a scroll elsewhere is the reader's.
    if (this.partial) this.partial.scrollTop = this.scroller.scrollTop;
    if (this.gapFill) {
      this.gapFill = false;
      this.app.afterPaint(() => this.fillGap(list));
    }
  }

  // The prefetched page again, and what came after it: edits, reactions and thumbnails
  // made before the event queue existed reach this page only so. Once the page is drawn and
  // idle, quietly (the page is readable meanwhile): at login it competed with the first
  // screen for the main thread and the server.
  async fillGap(list) {
    if (this.list !== list || !list.ids.length) return;
    if (list.loading) {
      this.app.afterPaint(() => this.fillGap(list));
      return;
    }
    const drawnBefore = new Set(list.ids);
    const changed = await this.fetch(list.ids[0], 0, list.ids.length + FETCH_BATCH, true, true, true);
    // Only messages after the page (the next ones, or sent meanwhile): drawn after it, the
    // page on screen left as it is; a page that changed is drawn again.
    const onlyLater = changed.every((m) => !drawnBefore.has(m.id));
    if (this.list === list && changed.length) {
      this.drawRest();
      if (!(onlyLater && this.appendNew())) this.render();
    }
  }

  // Fetches into the shown list; returns the messages fetched, or with ``changedOnly`` those
  // of them that are new or changed. ``quiet``: the feed is not shown busy meanwhile.
  fetch(anchor, numBefore, numAfter, includeAnchor = true, changedOnly = false, quiet = false) {
    return this.fetchInto(this.list, [anchor, numBefore, numAfter, includeAnchor], { changedOnly, quiet });
  }

  // The first page of the channels a reader is likely to open next, those with the newest
  // unread messages (up to ``count``, one request at a time), into their lists, where open()
  // finds them: a cached list, kept up to date by events as every list is (store/messages.js).
  async preload(count) {
    const state = this.state;
    const newest = new Map();
    for (const [id, entry] of state.unread.entries) {
      if (entry.type !== "stream" || !state.subs.isSubscribed(entry.stream_id) || state.subs.isTopicMuted(entry.stream_id, entry.topic)) continue;
      if (id > (newest.get(entry.stream_id) || 0)) newest.set(entry.stream_id, id);
    }
    const channels = [...newest].sort((a, b) => b[1] - a[1]).slice(0, count);
    for (const [streamId] of channels) {
      if (this.app.state !== state) return;
      const list = state.messages.list([{ operator: "channel", operand: streamId, negated: false }]);
      if (list.ids.length || list.loading || list === this.list) continue;
      // Quietly: a failure here is no one's, and the list stays empty to be fetched on opening.
      list.preloading = this.fetchInto(list, INITIAL_FETCH, { quiet: true, silent: true });
      await list.preloading;
      list.preloading = null;
    }
  }

  // fetch() into any list; ``silent``: a failure is not shown.
  async fetchInto(list, [anchor, numBefore, numAfter, includeAnchor = true], { changedOnly = false, quiet = false, silent = false } = {}) {
    if (!list || list.loading) return [];
    list.loading = true;
    if (!quiet) this.setLoading(true);
    try {
      const params = messagesParams(list.terms, anchor, numBefore, numAfter, includeAnchor);
      // The page's first request (main.js prefetchInitialNarrow) is the shown list's.
      const prefetched = list === this.list ? this.app.takePrefetch(params) : null;
      // A prefetched page was asked for before any event: every event applied since wins.
      const asOf = prefetched ? 0 : this.state.messages.stamp;
      const data = await (prefetched || this.app.api.get("/messages", params));
      // Fetched before the event queue existed: what changed in between is fetched next.
      if (prefetched) this.gapFill = true;
      const messages = data.messages || [];
      const changed = new Set(this.state.messages.store(messages, asOf));
      for (const m of messages) {
        this.state.users.learn(m);
        if (m.type === "stream") this.state.subs.noteTopic(m.stream_id, m.subject, m.id);
        // A message fetched unread that the unread store does not know (old unreads).
        if (!(m.flags || []).includes("read") && !this.state.unread.has(m.id)) this.state.unread.addMessage(m);
      }
      for (const m of messages) list.insert(m.id);
      if (data.found_oldest) list.foundOldest = true;
      if (data.found_newest) list.foundNewest = true;
      return changedOnly ? messages.filter((m) => changed.has(m.id)) : messages;
    } catch (error) {
      if (!silent) this.app.showError(error);
      return [];
    } finally {
      list.loading = false;
      if (!quiet) this.setLoading(false);
      if (list === this.list) this.recheckEdge();
    }
  }

  // A scroll that onScroll set aside while the list was loading or drawn in part, looked at
  // now (after the caller has drawn what came).
  recheckEdge() {
    if (this.edgeMissed) setTimeout(() => this.onScroll());
  }

  // A narrow is first drawn around where scrollToStart puts it (the anchor in the middle, the
  // first unread message at the top, else the newest at the bottom): a screen of rows, from
  // the start of a recipient group, so each row is drawn as in the whole list (its bar, whether
  // it continues its sender's messages). The rest is drawn around those rows, which stay as
  // they are, when the reader goes past them (onScroll, setSelected), when the list changes
  // (refresh), or once the page is quiet (REST_AFTER_MS). Drawing and laying out a hundred rows
  // at once made every narrow switch, and the input right after it, wait for those out of view.
  renderOpening(anchor) {
    const list = this.list;
    const ids = list.ids;
    const rows = Math.ceil(this.viewHeight / MIN_ROW_PX) + 2;
    const anchored = anchor ? ids.indexOf(anchor) : -1;
    const unread = anchored < 0 && !anchor ? ids.findIndex((id) => this.state.unread.has(id)) : -1;
    let from = ids.length - rows;
    let to = ids.length;
    if (anchored >= 0) {
      const half = Math.ceil(rows / 2) + 2;
      from = Math.min(anchored - half, ids.length - rows);
      to = Math.max(Math.max(0, from) + rows, anchored + half);
    } else if (unread >= 0) {
      from = Math.min(unread, ids.length - rows);
      to = unread + rows;
    }
    from = Math.max(0, from);
    to = Math.min(ids.length, to);
    const wanted = from;
    while (from > 0 && wanted - from <= rows && this.sameGroup(ids[from - 1], ids[from])) from -= 1;
    if (wanted - from > rows || to - from >= ids.length * 0.8) {
      this.render();
      return;
    }
    this.render({ from, to });
    setTimeout(() => {
      const rest = () => this.drawRest(list);
      if (window.requestIdleCallback) window.requestIdleCallback(rest, { timeout: 1000 });
      else rest();
    }, REST_AFTER_MS);
  }

  // Whether two consecutive messages are drawn in one recipient group (drawMessage).
  sameGroup(firstId, secondId) {
    const first = this.state.messages.get(firstId);
    const second = this.state.messages.get(secondId);
    if (!first || !second) return false;
    return conversationKey(first, this.state.myId) === conversationKey(second, this.state.myId) && formatDay(first.timestamp) === formatDay(second.timestamp);
  }

  // The rows of ``list`` (if shown, and drawn in part) after the part, as new messages are
  // (appendNew), and those before it above, the reader's place kept.
  drawRest(list = this.list) {
    const part = this.partial;
    if (this.list !== list || !part) return;
    this.partial = null;
    this.recheckEdge();
    this.drawn = part.drawn;
    if (!this.appendNew()) {
      this.refresh();
      return;
    }
    if (!part.from) return;
    const fragment = document.createDocumentFragment();
    if (list.foundOldest) fragment.append(h("p", { class: "feed-edge", text: t("Beginning of this conversation") }));
    // Keeps this.elements in the list's order (refresh finds the top row by it).
    const after = this.elements;
    this.elements = new Map();
    const drawn = { group: null, key: null, previous: null, day: null };
    for (const id of list.ids.slice(0, part.from)) {
      const message = this.state.messages.get(id);
      if (message) this.drawMessage(message, drawn, fragment);
    }
    const markable = !isSearchNarrow(list.terms);
    for (const [id, el] of this.elements) if (markable && this.state.unread.has(id)) this.reader.observe(el);
    for (const [id, el] of after) this.elements.set(id, el);
    const { scrollTop, scrollHeight } = this.scroller;
    this.container.prepend(fragment);
    this.scroller.scrollTop = scrollTop + (this.scroller.scrollHeight - scrollHeight);
  }

  setLoading(on) {
    this.scroller.setAttribute("aria-busy", on ? "true" : "false");
  }

  async onScroll() {
    const list = this.list;
    if (this.partial && Math.abs(this.scroller.scrollTop - this.partial.scrollTop) >= 1) this.drawRest();
    // Until the whole list is drawn, its edges on screen are not the list's. A scroll to an
    // edge meanwhile is looked at again once the list is ready (recheckEdge): at the edge no
    // further scroll event comes.
    if (!list || list.loading || !list.ids.length || this.partial) {
      this.edgeMissed = true;
      return;
    }
    this.edgeMissed = false;
    const { scrollTop, scrollHeight, clientHeight } = this.scroller;
    if (scrollTop < LOAD_MARGIN_PX && !list.foundOldest) {
      const before = scrollHeight;
      const top = scrollTop;
      await this.fetch(list.ids[0], FETCH_BATCH, 0, false);
      if (this.list !== list) return;
      this.render();
      // Older messages went in above: keep the reader's place.
      this.scroller.scrollTop = top + (this.scroller.scrollHeight - before);
    } else if (scrollHeight - scrollTop - clientHeight < LOAD_MARGIN_PX && !list.foundNewest) {
      await this.fetch(list.ids[list.ids.length - 1], 0, FETCH_BATCH, false);
      if (this.list !== list) return;
      this.refresh();
    }
  }

  atBottom() {
    const { scrollTop, scrollHeight, clientHeight } = this.scroller;
    return scrollHeight - scrollTop - clientHeight < 60;
  }

  scrollToStart(anchor) {
    const target = anchor ? this.elements.get(anchor) : this.firstUnreadElement();
    if (target) {
      this.app.select(Number(target.dataset.id), { scroll: false });
      target.scrollIntoView({ block: anchor ? "center" : "start" });
    } else {
      this.scroller.scrollTop = this.scroller.scrollHeight;
      if (this.list && this.list.ids.length) this.app.select(this.list.ids[this.list.ids.length - 1], { scroll: false });
    }
  }

  firstUnreadElement() {
    if (!this.list) return null;
    const id = this.list.ids.find((i) => this.state.unread.has(i));
    return id ? this.elements.get(id) : null;
  }

  // Re-renders keeping the message at the top of the viewport in place (or the bottom
  // stuck); with ``appendOnly``, when only new messages came, draws just those.
  refresh({ appendOnly = false } = {}) {
    if (!this.list) return;
    // A part drawn that stops short of the newest row is at its own bottom only.
    const stick = this.atBottom() && !(this.partial && this.partial.to < this.list.ids.length);
    if (appendOnly) this.drawRest();
    if (appendOnly && this.appendNew()) {
      if (stick) this.scroller.scrollTop = this.scroller.scrollHeight;
      this.trimIfAtBottom();
      return;
    }
    let anchorId = null;
    let anchorOffset = 0;
    if (!stick) {
      const top = this.scroller.getBoundingClientRect().top;
      for (const [id, el] of this.elements) {
        const rect = el.getBoundingClientRect();
        if (rect.bottom > top) {
          anchorId = id;
          anchorOffset = rect.top - top;
          break;
        }
      }
    }
    this.render();
    if (stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    else if (anchorId && this.elements.has(anchorId)) {
      const top = this.scroller.getBoundingClientRect().top;
      this.scroller.scrollTop += this.elements.get(anchorId).getBoundingClientRect().top - top - anchorOffset;
    }
  }

  // ``part``: only the list's ids from ``part.from`` up to ``part.to`` (renderOpening).
  render(part = null) {
    const refocus = this.editing && this.editing.form.contains(document.activeElement) ? document.activeElement : null;
    this.renderList(part);
    if (refocus) refocus.focus({ preventScroll: true });
  }

  renderList(part = null) {
    this.reader.disconnect();
    this.elements.clear();
    this.drawn = null;
    this.partial = null;
    const list = this.list;
    const fragment = document.createDocumentFragment();
    if (!list) return;
    const first = part ? part.from : 0;
    const last = part ? part.to : list.ids.length;
    if (list.foundOldest && list.ids.length && first === 0) fragment.append(h("p", { class: "feed-edge", text: t("Beginning of this conversation") }));
    const echoes = last === list.ids.length ? this.state.messages.echoesFor(list) : [];
    const ids = part ? list.ids.slice(first, last) : list.ids;
    const shown = [...ids.map((id) => this.state.messages.get(id)).filter(Boolean), ...echoes];
    const drawn = { list, version: list.version, count: last, echoes: echoes.length, group: null, key: null, previous: null, day: null };
    for (const message of shown) this.drawMessage(message, drawn, fragment);
    if (!shown.length && !list.loading) {
      fragment.append(h("p", { class: "feed-empty", text: list.foundNewest ? t("No messages here yet.") : t("Loading…") }));
    }
    clear(this.container).append(fragment);
    // A part is appended to once the rest is drawn (drawRest).
    if (part) this.partial = { ...part, drawn: shown.length ? drawn : null };
    else if (shown.length) this.drawn = drawn;
    const markable = !isSearchNarrow(list.terms);
    for (const [id, el] of this.elements) if (markable && this.state.unread.has(id)) this.reader.observe(el);
  }

  // One message after those drawn (``drawn`` says where the last one went): into the last
  // recipient group while the conversation and the day go on, else into a new one.
  drawMessage(message, drawn, parent) {
    const key = conversationKey(message, this.state.myId);
    const day = formatDay(message.timestamp);
    const newDay = drawn.previous && drawn.day !== day;
    drawn.day = day;
    if (key !== drawn.key || newDay) {
      drawn.group = h("section", { class: "recipient-group", "aria-label": this.recipientLabel(message) }, this.recipientBar(message));
      parent.append(drawn.group);
      drawn.key = key;
      drawn.previous = null;
    }
    const previous = drawn.previous;
    const continued = previous && previous.sender_id === message.sender_id && message.timestamp - previous.timestamp < CONTINUE_SECONDS;
    const el = this.messageElement(message, continued);
    drawn.group.append(el);
    if (!message.locally_echoed) this.elements.set(message.id, el);
    drawn.previous = message;
    return el;
  }

  // Draws only the messages that arrived after those drawn, when nothing else in the list
  // changed since (its version) and no echo is involved; false when a full render is needed.
  appendNew() {
    const drawn = this.drawn;
    const list = this.list;
    if (!drawn || drawn.list !== list || drawn.version !== list.version || drawn.echoes) return false;
    if (list.ids.length < drawn.count || !drawn.group.isConnected) return false;
    if (this.state.messages.echoesFor(list).length) return false;
    const markable = !isSearchNarrow(list.terms);
    for (const id of list.ids.slice(drawn.count)) {
      const message = this.state.messages.get(id);
      if (!message) return false;
      const el = this.drawMessage(message, drawn, this.container);
      if (markable && this.state.unread.has(id)) this.reader.observe(el);
    }
    drawn.count = list.ids.length;
    return true;
  }

  // After live messages: a reader at the bottom of a list grown past LIVE_LIST_MAX keeps its
  // newest LIVE_LIST_KEEP (the rows, and the DOM, of a page open for hours stay bounded).
  trimIfAtBottom() {
    const list = this.list;
    if (!list || list.ids.length <= LIVE_LIST_MAX || !list.foundNewest || !this.atBottom()) return false;
    list.trimOldest(LIVE_LIST_KEEP);
    this.render();
    this.scroller.scrollTop = this.scroller.scrollHeight;
    return true;
  }

  recipientLabel(message) {
    if (message.type === "stream") return `#${this.state.subs.name(message.stream_id)} > ${message.subject}`;
    return t("Direct messages with {names}", { names: this.dmNames(message) });
  }

  dmNames(message) {
    return messageDmIds(message, this.state.myId).map((id) => this.state.users.name(id)).join(", ");
  }

  recipientBar(message) {
    const lookup = this.app.lookup;
    const day = h("span", { class: "recipient-day", text: formatDay(message.timestamp) });
    if (message.type === "stream") {
      const sub = this.state.subs.get(message.stream_id);
      const channelTerms = [{ operator: "channel", operand: message.stream_id, negated: false }];
      const bar = h("header", { class: "recipient-bar stream" },
        h("a", { class: "recipient-channel", dir: "auto", href: narrowToHash(channelTerms, lookup), text: "#" + this.state.subs.name(message.stream_id) }),
        h("span", { class: "recipient-sep", "aria-hidden": "true", text: "›" }),
        h("a", { class: "recipient-topic", href: narrowToHash([...channelTerms, { operator: "topic", operand: message.subject, negated: false }], lookup) },
          message.match_subject ? setHtml(h("span"), message.match_subject) : (message.subject || this.state.realm.realm_empty_topic_display_name || t("general chat"))),
        this.topicMarks(message.stream_id, message.subject),
        h("button", { type: "button", class: "icon-button topic-menu-button", dataset: { topicMenu: "1" }, "aria-label": t("Topic actions"), "aria-haspopup": "menu", title: t("Topic actions"), text: "⋮" }),
        day);
      if (sub && sub.color) bar.style.setProperty("--channel-color", sub.color);
      return bar;
    }
    const ids = messageDmIds(message, this.state.myId);
    return h("header", { class: "recipient-bar dm" },
      h("a", { href: narrowToHash([{ operator: "dm", operand: ids, negated: false }], lookup), text: t("You and ") + this.dmNames(message) }),
      day);
  }

  // A followed or muted topic says so beside its name.
  topicMarks(streamId, topic) {
    const policy = this.state.subs.policy(streamId, topic);
    if (policy === FOLLOWED) return h("span", { class: "topic-mark", title: t("You follow this topic"), text: t("followed") });
    if (this.state.subs.isTopicMuted(streamId, topic)) return h("span", { class: "topic-mark", title: t("Muted"), text: t("muted") });
    return null;
  }

  messageElement(message, continued) {
    const state = this.state;
    // A message being sent has no id yet: nothing to act on until the server's copy replaces it.
    const echo = Boolean(message.locally_echoed);
    const sender = state.users.get(message.sender_id) || { full_name: message.sender_full_name, avatar_url: message.avatar_url };
    const classes = ["message"];
    if (continued) classes.push("continued");
    if (message.sender_id === state.myId) classes.push("mine");
    const flags = message.flags || [];
    if (state.unread.has(message.id)) classes.push("unread");
    if (flags.includes("mentioned") || flags.includes("wildcard_mentioned")) classes.push("mentioned");
    if (!echo && this.app.selectedId === message.id) classes.push("selected");
    // Text on its way to the server (a message being sent, an edit being saved) shows as
    // typed, greyed, until the server's rendering arrives.
    const pending = echo ? message.raw_text : message.pending_edit;
    if (pending !== undefined) classes.push(echo ? "sending" : "saving");
    const editing = this.editing && this.editing.id === message.id;
    const when = formatDateTime(message.timestamp);
    const widget = !editing && pending === undefined ? widgetState(message) : null;
    const content = editing ? this.editing.form
      : pending !== undefined ? h("div", { class: "msg-content pending-text", dir: "auto", text: pending })
      : widget ? h("div", { class: "msg-content" }, widgetElement(this.app, message, widget))
      : setHtml(h("div", { class: "msg-content rendered", dir: "auto" }), message.match_content || message.content);
    return h("article", {
      class: classes.join(" "), dataset: echo ? { local: message.local_id } : { id: message.id }, tabindex: "-1",
      "aria-busy": String(pending !== undefined), "aria-label": echo ? t("{name}, sending", { name: sender.full_name }) : `${sender.full_name}, ${when}`,
    },
      h("div", { class: "msg-gutter" }, continued ? null : h("button", { type: "button", class: "avatar-button", dataset: { profile: message.sender_id }, "aria-label": t("Profile of {name}", { name: sender.full_name }), tabindex: "-1" }, avatar(sender))),
      h("div", { class: "msg-main" },
        continued ? null : h("div", { class: "msg-head" },
          h("button", { type: "button", class: "sender-name", dataset: { profile: message.sender_id }, "aria-haspopup": "dialog", text: sender.full_name }),
          statusEmoji(state, message.sender_id)),
        content,
        this.reactionsElement(message)),
      echo ? h("div", { class: "msg-meta" }, h("span", { class: "sending-note", text: t("Sending…") })) : this.metaElement(message, flags.includes("starred"), when));
  }

  // The toolbar floats just left of the time, so the selected message (whose toolbar stays
  // shown) keeps its time and the recipient bar's day in view.
  metaElement(message, starred, when = formatDateTime(message.timestamp)) {
    const edited = message.last_edit_timestamp ? h("span", { class: "edited", title: t("Edited {time}", { time: formatDateTime(message.last_edit_timestamp) }), text: t("(edited)") }) : null;
    const moved = !edited && message.last_moved_timestamp ? h("span", { class: "edited", text: t("(moved)") }) : null;
    return h("div", { class: "msg-meta" },
      h("div", { class: "msg-actions", role: "toolbar", "aria-label": t("Message actions") },
        h("button", { type: "button", class: "icon-button", dataset: { action: "react" }, "aria-label": t("Add reaction"), title: t("Add reaction"), text: "☺" }),
        h("button", { type: "button", class: "icon-button" + (starred ? " on" : ""), dataset: { action: "star" }, "aria-label": starred ? t("Unstar") : t("Star"), "aria-pressed": String(starred), title: starred ? t("Unstar (s)") : t("Star (s)"), text: starred ? "★" : "☆" }),
        h("button", { type: "button", class: "icon-button", dataset: { action: "menu" }, "aria-label": t("More actions"), "aria-haspopup": "menu", title: t("More actions"), text: "⋯" })),
      starred ? h("span", { class: "star-indicator", title: t("Starred"), "aria-label": t("Starred"), text: "★" }) : null,
      edited || moved,
      h("time", { datetime: new Date(message.timestamp * 1000).toISOString(), title: when, text: formatTime(message.timestamp) }));
  }

  reactionsElement(message) {
    const reactions = message.reactions || [];
    if (!reactions.length) return null;
    const groups = new Map();
    for (const r of reactions) {
      const key = `${r.reaction_type}:${r.emoji_code}`;
      if (!groups.has(key)) groups.set(key, { ...r, users: [] });
      groups.get(key).users.push(r.user_id);
    }
    const box = h("div", { class: "reactions" });
    for (const g of groups.values()) {
      const mine = g.users.includes(this.state.myId);
      const names = g.users.map((id) => (id === this.state.myId ? t("You") : this.state.users.name(id))).join(", ");
      box.append(h("button", {
        type: "button", class: "reaction" + (mine ? " mine" : ""), "aria-pressed": String(mine),
        dataset: { action: "toggle-reaction", emojiName: g.emoji_name, emojiCode: g.emoji_code, reactionType: g.reaction_type },
        title: t("{names} reacted with :{emoji}:", { names, emoji: g.emoji_name }), "aria-label": `${g.emoji_name}: ${g.users.length}, ${names}`,
      }, this.emojiGlyph(g), h("span", { class: "reaction-count", text: String(g.users.length) })));
    }
    box.append(h("button", { type: "button", class: "reaction add-reaction", dataset: { action: "react" }, "aria-label": t("Add reaction"), text: "+" }));
    return box;
  }

  emojiGlyph(r) {
    if (r.reaction_type === "realm_emoji") {
      const custom = this.state.emoji[r.emoji_code];
      if (custom) return h("img", { class: "emoji", src: custom.source_url, alt: `:${r.emoji_name}:` });
    }
    if (r.reaction_type === "unicode_emoji") return h("span", { class: "emoji" }, emojiImage(r.emoji_code, r.emoji_name));
    return h("span", { class: "emoji", text: `:${r.emoji_name}:` });
  }

  onClick(event) {
    const topicMenu = event.target.closest("button[data-topic-menu]");
    if (topicMenu) {
      const first = topicMenu.closest(".recipient-group").querySelector("article.message[data-id]");
      const message = first && this.state.messages.get(Number(first.dataset.id));
      if (message) openTopicMenu(this.app, topicMenu, message.stream_id, message.subject);
      return;
    }
    const profile = event.target.closest("[data-profile]");
    if (profile) {
      openProfile(this.app, Number(profile.dataset.profile), profile);
      return;
    }
    const groupMention = event.target.closest(".user-group-mention[data-user-group-id]");
    if (groupMention) {
      import("./groups_view.js").then((m) => m.openGroups(this.app, Number(groupMention.dataset.userGroupId)));
      return;
    }
    const article = event.target.closest("article.message");
    if (!article || article.dataset.local) return;
    const spoiler = event.target.closest(".spoiler-header");
    if (spoiler) {
      // Spoilers open and close in place; the server renders them closed.
      const block = spoiler.parentElement;
      const open = block.classList.toggle("open");
      const hidden = block.querySelector(".spoiler-content");
      if (hidden) hidden.setAttribute("aria-hidden", String(!open));
      return;
    }
    const image = event.target.closest(".message_inline_image:not(.message_inline_video)");
    if (image && event.button === 0 && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      // A picture opens in the viewer rather than taking the tab to the raw file.
      event.preventDefault();
      import("./lightbox.js").then((m) => m.openLightbox(this.container, image));
      return;
    }
    const id = Number(article.dataset.id);
    const button = event.target.closest("button[data-action]");
    if (!event.target.closest("a")) this.app.select(id, { scroll: false });
    if (!button) return;
    const action = button.dataset.action;
    if (action === "toggle-reaction") {
      this.app.actions.toggleReaction(id, { emoji_name: button.dataset.emojiName, emoji_code: button.dataset.emojiCode, reaction_type: button.dataset.reactionType });
    } else if (action === "react") {
      this.app.actions.openEmojiPicker(id, button);
    } else if (action === "star") {
      this.app.actions.toggleStar(id);
    } else if (action === "menu") {
      this.app.actions.openMenu(id, button);
    }
  }

  // Re-renders one message in place (reaction, star, edit) without touching the rest.
  updateMessage(id) {
    const old = this.elements.get(id);
    const message = this.state.messages.get(id);
    if (!old || !message) return false;
    const el = this.messageElement(message, old.classList.contains("continued"));
    // A widget's text box being typed in keeps its text and focus across a live update.
    const typing = old.contains(document.activeElement) && document.activeElement.matches(".widget input[type=text]") ? document.activeElement : null;
    old.replaceWith(el);
    if (typing) {
      const again = el.querySelector(`.widget input.${typing.classList[0]}`);
      if (again) {
        again.value = typing.value;
        again.focus({ preventScroll: true });
      }
    }
    this.elements.set(id, el);
    if (this.state.unread.has(id) && !isSearchNarrow(this.list.terms)) this.reader.observe(el);
    return true;
  }

  setSelected(id, previous) {
    if (this.partial && !this.elements.has(id)) this.drawRest();
    if (previous && this.elements.has(previous)) this.elements.get(previous).classList.remove("selected");
    const el = this.elements.get(id);
    if (el) el.classList.add("selected");
    return el;
  }
}
