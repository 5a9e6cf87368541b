// The app: builds the views, connects the event loop to the stores, routes the URL hash to
// narrows, and re-renders what each change touches.

import * as api from "./api.js";
import { language, t } from "./i18n.js";
import { installShortcuts } from "./keys.js";
import { apiNarrow, anchorOf, formatSearch, narrowTitle, narrowToHash, parseHash, parseSearch, resolveTerms, messageMatches } from "./narrow.js";
import { notificationTitle, notifyMessage, offerNotifications, shouldNotify, updateTitle } from "./notify.js";
import { applyEvent, expireTyping, typingKeyForNarrow } from "./store/dispatch.js";
import { backoffDelay, EventLoop } from "./events.js";
import { createState, loadUsers, EVENT_TYPES, FIRST_FETCH_TYPES } from "./store/state.js";
import { UserListLoad } from "./store/users.js";
import { MessageActions } from "./views/actions.js";
import { Compose } from "./views/compose.js";
import { applyDisplaySettings, toast, announce, channelRef, h, isolateText } from "./views/dom.js";
import { FeedView, INITIAL_FETCH, messagesParams } from "./views/feed.js";
import { renderInbox, renderRecent } from "./views/overview.js";
import { Sidebar } from "./views/sidebar.js";
import { UserList } from "./views/userlist.js";

const PRESENCE_PING_MS = 60000;
const THEMES = { 1: "auto", 2: "light", 3: "dark" };
// The width below which app.css lays the page out for a phone.
const PHONE_WIDTH = "(max-width: 760px)";
// People stored per task as GET /users comes in (a few ms each at 1,000).
const USER_SLICE = 1000;
// Channels whose first page is fetched before they are opened (FeedView.preload), this long
// after the user list came: the pages' parsing and storing keep off the main thread while
// the page is still settling after login (the rest of the sidebar, the people list).
const PRELOADED_CHANNELS = 10;
const PRELOAD_AFTER_MS = 3000;

class App {
  constructor() {
    const body = document.body.dataset;
    this.me = { user_id: Number(body.userId), email: body.userEmail, full_name: body.fullName };
    this.realmName = body.realmName || "Palaver";
    this.api = api;
    this.state = null;
    // Settings and the panels they open read the state: they wait for the first /register.
    this.registered = new Promise((resolve) => { this.markRegistered = resolve; });
    // What needs the whole user list (compose's "To", profiles, settings) waits for it:
    // usersReady(). A new promise for each state that starts without the list.
    this.usersLoaded = new Promise((resolve) => { this.markUsersLoaded = resolve; });
    this.usersSettled = false;
    this.current = { view: "feed", terms: [] };
    this.selectedId = null;
    this.pending = new Set();
    this.frame = 0;
    this.topicRequests = new Set();
    this.actions = new MessageActions(this);
    this.lookup = {
      myId: this.me.user_id,
      channelName: (id) => (this.state ? this.state.subs.name(id) : String(id)),
      channelId: (name) => this.state && this.state.subs.idByName(name),
      userName: (id) => (this.state ? this.state.users.name(id) : String(id)),
      userEmail: (id) => (this.state ? this.state.users.email(id) : String(id)),
      userId: (text) => {
        const user = this.state && this.state.users.find(text);
        return user ? user.user_id : undefined;
      },
    };
  }

  start() {
    this.feedPane = document.getElementById("feed-pane");
    this.overviewPane = document.getElementById("overview-pane");
    this.feed = new FeedView(this, document.getElementById("feed-scroller"), document.getElementById("feed"));
    this.sidebar = new Sidebar(this, document.getElementById("left-sidebar-content"));
    this.users = new UserList(this, document.getElementById("right-sidebar"));
    this.compose = new Compose(this, document.getElementById("compose"));
    this.bindChrome();
    installShortcuts(this);
    window.addEventListener("hashchange", () => this.route());
    this.loop = new EventLoop({
      eventTypes: EVENT_TYPES,
      fetchTypes: FIRST_FETCH_TYPES,
      onRegister: (reg) => this.onRegister(reg),
      onEvents: (events) => this.onEvents(events),
      onStatus: (status) => this.setConnection(status),
    });
    this.prefetchInitialNarrow();
    // The signed-in user (role, avatar), which the first /register leaves out with the list.
    this.ownUser = api.get("/users/me");
    this.ownUser.catch(() => {});
    this.loop.start();
    setInterval(() => this.pingPresence(), PRESENCE_PING_MS);
    setInterval(() => {
      if (this.state && expireTyping(this.state)) this.render(new Set(["typing"]));
    }, 3000);
  }

  bindChrome() {
    const search = document.getElementById("search-form");
    search.addEventListener("submit", (event) => {
      event.preventDefault();
      this.search(document.getElementById("search-input").value);
    });
    // Suggestions are their own module, loaded when the box is first used.
    const input = document.getElementById("search-input");
    input.addEventListener("focus", () => {
      Promise.all([import("./views/search_suggest.js"), this.usersReady()]).then(([m]) => m.attachSuggestions(this, input, (text) => this.search(text)));
    }, { once: true });
    // The operators' hint does not fit a phone's box (the suggestions list them on focus).
    const phone = window.matchMedia(PHONE_WIDTH);
    const hints = { wide: input.placeholder, narrow: input.dataset.narrowPlaceholder || input.placeholder };
    const fitHint = () => { input.placeholder = phone.matches ? hints.narrow : hints.wide; };
    phone.addEventListener("change", fitHint);
    fitHint();
    document.getElementById("toggle-left").addEventListener("click", () => this.togglePanel("show-left"));
    document.getElementById("toggle-right").addEventListener("click", () => this.togglePanel("show-right"));
    document.getElementById("settings-button").addEventListener("click", () => this.openSettings("profile"));
    document.getElementById("skip-to-feed").addEventListener("click", () => this.focusFeed());
    // On a phone the sidebars are drawers: following a link closes them.
    for (const id of ["left-sidebar", "right-sidebar"]) {
      document.getElementById(id).addEventListener("click", (event) => {
        if (event.target.closest("a")) document.body.classList.remove("show-left", "show-right");
      });
    }
    document.addEventListener("click", () => offerNotifications(document.getElementById("main")), { once: true });
  }

  togglePanel(name) {
    const on = !document.body.classList.contains(name);
    document.body.classList.remove("show-left", "show-right");
    document.body.classList.toggle(name, on);
    document.getElementById(name === "show-left" ? "toggle-left" : "toggle-right").setAttribute("aria-expanded", String(on));
  }

  // The first page of messages is asked for while /register runs, not after it: the
  // narrow in the URL needs no state when its operands are ids.
  prefetchInitialNarrow() {
    const parsed = parseHash(window.location.hash);
    if (!parsed || parsed.view === "inbox" || parsed.view === "recent" || anchorOf(parsed.terms)) return;
    if (parsed.terms.some((t) => ["channel", "sender", "dm"].includes(t.operator) && typeof t.operand === "string")) return;
    const params = messagesParams(parsed.terms, ...INITIAL_FETCH);
    this.prefetch = { key: JSON.stringify(params), promise: api.get("/messages", params) };
    this.prefetch.promise.catch(() => {});
  }

  // The prefetched response, once, if it is the one asked for.
  takePrefetch(params) {
    const prefetch = this.prefetch;
    this.prefetch = null;
    return prefetch && prefetch.key === JSON.stringify(params) ? prefetch.promise : null;
  }

  // ---- connection ---------------------------------------------------------------------------

  async onRegister(reg) {
    const first = !this.state;
    // Marks on the page's performance timeline (bench/web_client.py prints them).
    performance.mark("palaver:registered");
    // Asked for beside the first /register; after a reconnect, again (the role may have
    // changed). The user list (loadUsers) corrects it either way.
    const ownRequest = this.ownUser || api.get("/users/me");
    this.ownUser = null;
    const own = await ownRequest.catch(() => null);
    this.state = createState(reg, this.me, own || { user_id: this.me.user_id, full_name: this.me.full_name, email: this.me.email });
    if (!this.state.users.complete && this.usersSettled) {
      this.usersSettled = false;
      this.usersLoaded = new Promise((resolve) => { this.markUsersLoaded = resolve; });
    }
    performance.mark("palaver:state");
    this.markRegistered();
    this.topicRequests.clear();
    this.applyTheme();
    this.compose.refreshChannels();
    this.compose.refreshDrafts();
    // The "Scheduled (n)" link shows once there are some.
    if (first) setTimeout(() => import("./views/compose_extra.js").then((m) => m.refreshScheduledCount(this.compose)).catch(() => {}), 2000);
    // Presence can wait until the feed is on screen.
    if (first) setTimeout(() => this.pingPresence(), 1500);
    // A fresh state after a reconnect: the current narrow is fetched again from the server.
    this.setConnection("live");
    await this.route();
    if (first) performance.mark("palaver:feed");
    this.render(new Set(["sidebar", "realm", "typing"]));
    // The second phase: the user list, asked for once the feed is drawn and the page idle
    // (parsing and drawing it is a few hundred ms of main thread on a busy machine).
    const state = this.state;
    this.afterPaint(() => this.loadUsers(state));
  }

  // GET /users into ``state``, retried until it comes or a reconnect's state replaces it;
  // then what drew names from messages alone is drawn again. The 4 MB of 10,000 people are
  // parsed in a worker and stored a slice per task, so the page stays responsive meanwhile.
  async loadUsers(state) {
    let stale = false;
    for (let attempt = 0; !state.users.complete; attempt += 1) {
      const list = new UserListLoad();
      try {
        const params = { client_gravatar: false, include_custom_profile_fields: true };
        await api.getInSlices("/users", params, "members", (members) => {
          if (this.state !== state) throw new Error("replaced by a reconnect's state");
          list.add(members);
        }, { size: USER_SLICE });
        if (this.state !== state) return;
        stale = state.users.heard.length > 0 || Boolean(state.users.missed);
        loadUsers(state, list);
      } catch (error) {
        if (this.state !== state || (error instanceof api.ApiError && error.status === 401)) return;
        await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt)));
        if (this.state !== state) return;
      }
    }
    performance.mark("palaver:users");
    this.usersSettled = true;
    this.markUsersLoaded();
    // A DM narrow's "To" was filled from the messages' addresses.
    if (this.current.terms.some((term) => term.operator === "dm")) this.compose.followNarrow(this.current.terms);
    document.getElementById("narrow-title").replaceChildren(...this.titleNodes());
    // The feed named people as its messages do: drawn again if a change was heard since, or
    // if it named someone no message did. Who is typing may have been named before the list.
    this.render(new Set(["users", "sidebar", "groups", "typing", ...(stale ? ["feed"] : [])]));
    // Then, quietly, the first page of the channels most likely opened next.
    setTimeout(() => this.afterPaint(() => {
      if (this.state === state) this.feed.preload(PRELOADED_CHANNELS).catch(() => {});
    }), PRELOAD_AFTER_MS);
  }

  // Resolves once the state holds the whole user list.
  async usersReady() {
    await this.registered;
    while (!this.state.users.complete) await this.usersLoaded;
  }

  // Runs ``task`` once the browser has drawn what is on screen now and is idle (or after a
  // second at the latest).
  afterPaint(task) {
    requestAnimationFrame(() => setTimeout(() => {
      if (window.requestIdleCallback) window.requestIdleCallback(task, { timeout: 1000 });
      else task();
    }, 0));
  }

  onEvents(events) {
    const changes = new Set();
    let sentByMe = false;
    // Whether the feed changed only by new messages (which it can draw without a full render).
    let onlyNew = true;
    for (const event of events) {
      const made = applyEvent(this.state, event);
      if (made.has("feed") && event.type !== "message") onlyNew = false;
      for (const change of made) changes.add(change);
      if (event.type === "message") {
        const message = this.state.messages.get(event.message.id);
        if (message.sender_id === this.state.myId) sentByMe = true;
        this.onNewMessage(message, event.flags || []);
      } else if (event.type === "update_message") {
        this.followMovedTopic(event);
      } else if (event.type === "realm_user" && event.person && event.person.user_id === this.state.myId && event.person.is_active === false) {
        window.location.assign("/");
      } else if (event.type === "user_settings" && event.property === "default_language") {
        // The page carries one language's messages (and its direction): a new language is a new page.
        window.location.reload();
      }
    }
    if (sentByMe && this.feed.list && this.feed.list.foundNewest) this.stickToBottom = true;
    this.render(changes, { onlyNew });
  }

  // When the whole topic being read is moved or resolved, the view goes with it.
  followMovedTopic(event) {
    if (event.propagate_mode !== "change_all" || event.orig_subject === undefined) return;
    if (event.subject === undefined && event.new_stream_id === undefined) return;
    const terms = this.current.terms;
    const channel = terms.find((t) => t.operator === "channel" && !t.negated);
    const topic = terms.find((t) => t.operator === "topic" && !t.negated);
    if (!channel || !topic || channel.operand !== event.stream_id) return;
    if (String(topic.operand).toLowerCase() !== event.orig_subject.toLowerCase()) return;
    const moved = terms.map((t) => {
      if (t === channel && event.new_stream_id !== undefined) return { ...t, operand: event.new_stream_id };
      if (t === topic && event.subject !== undefined) return { ...t, operand: event.subject };
      return t;
    });
    window.history.replaceState(null, "", narrowToHash(moved, this.lookup));
    this.route();
  }

  onNewMessage(message, flags) {
    const inView = this.current.view === "narrow" || this.current.view === "feed" ? messageMatches(this.current.terms, message, this.state.myId) : false;
    if (inView && message.sender_id !== this.state.myId) announce(t("New message from {name}", { name: message.sender_full_name }));
    // A sound for what would notify (DMs, mentions), whether or not notifications are on.
    const settings = this.state.settings;
    if (settings.enable_sounds && settings.notification_sound !== "none" && shouldNotify(message, flags, this.state.myId, {})) {
      import("./views/sounds.js").then((m) => m.play(settings.notification_sound)).catch(() => {});
    }
    if (shouldNotify(message, flags, this.state.myId, this.state.settings)) {
      const channel = message.type === "stream" ? this.state.subs.name(message.stream_id) : "";
      notifyMessage(message, notificationTitle(message, channel), () => this.goToMessage(message));
    }
  }

  setConnection(status) {
    const el = document.getElementById("connection-status");
    el.textContent = status === "reconnecting" ? t("Reconnecting…") : "";
    el.classList.toggle("visible", status === "reconnecting");
  }

  async pingPresence() {
    if (!this.state) return;
    try {
      const presence = this.state.presence;
      const status = document.visibilityState === "visible" ? "active" : "idle";
      const data = await api.post("/users/me/presence", { status, new_user_input: true, ping_only: false, slim_presence: true, last_update_id: presence.lastUpdateId });
      presence.absorb(data);
      // Even with nothing new: a dot turns idle or offline as time passes since the last change.
      this.render(new Set(["users"]));
    } catch {
      // The event loop reports connection trouble; presence just tries again later.
    }
  }

  // ---- rendering ----------------------------------------------------------------------------

  // Collects changes and renders once per animation frame. ``onlyNew``: a "feed" change is
  // only new messages (live events), which the feed may just append.
  render(changes, { onlyNew = false } = {}) {
    if (changes.has("feed") && !onlyNew) this.feedFull = true;
    for (const change of changes) this.pending.add(change);
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const pending = this.pending;
      const full = this.feedFull;
      this.pending = new Set();
      this.feedFull = false;
      this.flush(pending, full);
    });
  }

  flush(changes, feedFull = true) {
    if (!this.state) return;
    this.countsCache = null;
    // First: the display settings (time format, emoji set) change how the views draw.
    if (changes.has("settings")) this.applyTheme();
    if (changes.has("sidebar") || changes.has("realm")) this.sidebar.render();
    if (changes.has("users")) this.users.render();
    if (!changes.has("feed") && this.current.view !== "inbox" && this.current.view !== "recent") {
      for (const change of changes) if (change.startsWith("msg:")) this.feed.updateMessage(Number(change.slice(4)));
    }
    if (changes.has("feed")) {
      if (this.current.view === "inbox") renderInbox(this, this.overviewPane);
      else if (this.current.view !== "recent") {
        if (this.stickToBottom) {
          this.feed.render();
          this.feed.scroller.scrollTop = this.feed.scroller.scrollHeight;
          this.stickToBottom = false;
        } else {
          this.feed.refresh({ appendOnly: !feedFull });
        }
      }
    } else if (changes.has("sidebar") && this.current.view === "inbox") {
      renderInbox(this, this.overviewPane);
    }
    if (changes.has("feed") && this.current.view === "recent") this.refreshRecentSoon();
    if (changes.has("subscriptions")) this.compose.refreshChannels();
    // A topic heard while the topic field is in use joins its suggestions.
    if (changes.has("topics")) this.compose.refreshTopics();
    if (changes.has("users")) this.compose.refreshPeople();
    if (changes.has("drafts")) this.compose.refreshDrafts();
    if (changes.has("typing")) this.renderTyping();
    // An open settings section that follows live changes names them in panel.redrawOn.
    for (const panel of document.querySelectorAll("#settings-panel, .live-panel")) {
      if (panel.redraw && (panel.redrawOn || ["emoji"]).some((change) => changes.has(change))) panel.redraw(changes);
    }
    if (changes.has("realm")) document.querySelector(".realm-name").textContent = this.state.realm.realm_name || this.realmName;
    const home = this.current.view === "feed" && !this.current.terms.length;
    updateTitle(this.counts().total, home ? "" : this.pageTitleText(), this.state.realm.realm_name || this.realmName);
  }

  // Recent conversations are fetched from the server: at most once every two seconds.
  refreshRecentSoon() {
    if (this.recentTimer) return;
    this.recentTimer = setTimeout(() => {
      this.recentTimer = null;
      if (this.current.view === "recent") renderRecent(this, this.overviewPane, { quiet: true });
    }, 2000);
  }

  counts() {
    if (!this.countsCache) {
      const subs = this.state.subs;
      this.countsCache = this.state.unread.counts((streamId, topic) => subs.isTopicMuted(streamId, topic));
    }
    return this.countsCache;
  }

  titleText() {
    if (this.current.view === "inbox") return t("Inbox");
    if (this.current.view === "recent") return t("Recent conversations");
    if (this.current.terms.length === 1 && this.current.terms[0].operator === "is" && this.current.terms[0].operand === "followed") return t("Followed topics");
    return narrowTitle(this.current.terms, this.lookup);
  }

  // The page title: titleText() with a channel and its topic each between FSI and PDI (a
  // title holds no markup), so a Latin "#name" keeps its "#" in front in a right-to-left title.
  pageTitleText() {
    const terms = this.current.view === "narrow" ? this.current.terms : [];
    const channel = terms.find((t) => t.operator === "channel" && !t.negated);
    const text = this.titleText();
    if (!channel || !text.startsWith("#")) return text;
    const topic = terms.find((t) => t.operator === "topic" && !t.negated);
    const ref = isolateText(`#${this.lookup.channelName ? this.lookup.channelName(channel.operand) : channel.operand}`);
    return topic ? `${ref} > ${isolateText(topic.operand)}` : ref;
  }

  // The feed heading: titleText() with a channel and its topic each in a bidi isolate.
  titleNodes() {
    const terms = this.current.view === "narrow" ? this.current.terms : [];
    const channel = terms.find((t) => t.operator === "channel" && !t.negated);
    const text = this.titleText();
    if (!channel || !text.startsWith("#")) return [text];
    const topic = terms.find((t) => t.operator === "topic" && !t.negated);
    const ref = channelRef(this.lookup.channelName ? this.lookup.channelName(channel.operand) : channel.operand);
    return topic ? [ref, " > ", h("bdi", { text: topic.operand })] : [ref];
  }

  renderTyping() {
    const el = document.getElementById("typing");
    const key = typingKeyForNarrow(this.current.terms, this.state.myId);
    const users = key ? this.state.typing.get(key) : null;
    const names = users ? [...users.keys()].map((id) => this.state.users.name(id)) : [];
    if (!names.length) el.textContent = "";
    else if (names.length === 1) el.textContent = t("{name} is typing…", { name: names[0] });
    else el.textContent = t("{names} are typing…", { names: new Intl.ListFormat(language(), { type: "conjunction" }).format(names) });
  }

  applyTheme() {
    const scheme = this.state ? this.state.settings.color_scheme : Number(document.body.dataset.colorScheme);
    document.documentElement.dataset.theme = THEMES[scheme] || "auto";
    if (this.state) applyDisplaySettings(this.state.settings);
  }

  showError(error) {
    toast(error && error.message ? error.message : String(error), "error");
  }

  // ---- navigation ---------------------------------------------------------------------------

  apiNarrow(terms) {
    return apiNarrow(terms);
  }

  async route() {
    if (!this.state) return;
    let parsed = parseHash(window.location.hash) || { view: "feed", terms: [] };
    // People named by address or name in the link are looked up in the whole list.
    if (!this.state.users.complete && parsed.terms.some((t) => ["sender", "dm", "dm-including"].includes(t.operator) && typeof t.operand === "string")) {
      const hash = window.location.hash;
      await this.usersReady();
      if (window.location.hash !== hash) return;
      parsed = parseHash(hash);
    }
    // Links may name channels and people instead of giving their IDs ("#narrow/channel/general").
    parsed.terms = resolveTerms(parsed.terms, this.lookup);
    this.current = parsed;
    // The hash whose view is now on screen or on its way (the feed's aria-busy says which).
    this.routedHash = window.location.hash;
    const search = document.getElementById("search-input");
    search.value = parsed.view === "narrow" ? formatSearch(parsed.terms, this.lookup) : "";
    const overview = parsed.view === "inbox" || parsed.view === "recent";
    this.feedPane.hidden = overview;
    this.overviewPane.hidden = !overview;
    document.getElementById("narrow-title").replaceChildren(...this.titleNodes());
    this.render(new Set(["sidebar", "typing"]));
    // The page's first view may be one without a feed: the feed's "loading" ends there.
    if (overview && !this.feed.list) this.feed.setLoading(false);
    if (parsed.view === "inbox") return renderInbox(this, this.overviewPane);
    if (parsed.view === "recent") return renderRecent(this, this.overviewPane);
    this.compose.followNarrow(parsed.terms);
    const list = this.state.messages.list(parsed.terms);
    const anchor = anchorOf(parsed.terms);
    if (anchor) {
      // A link to one message: always fetched around it, not from a cached list.
      this.state.messages.dropList(parsed.terms);
      return this.feed.open(this.state.messages.list(parsed.terms), anchor);
    }
    return this.feed.open(list, null);
  }

  narrow(terms) {
    window.location.hash = narrowToHash(terms, this.lookup);
  }

  async search(text) {
    const trimmed = text.trim();
    if (!trimmed) {
      window.location.hash = "#feed";
      return;
    }
    await this.usersReady();
    const terms = resolveTerms(parseSearch(trimmed), this.lookup);
    const bad = terms.find((t) => (t.operator === "channel" || t.operator === "sender") && typeof t.operand === "string");
    if (bad) {
      toast(bad.operator === "channel" ? t("No channel named “{name}”", { name: bad.operand }) : t("No user named “{name}”", { name: bad.operand }), "error");
      return;
    }
    this.narrow(terms);
    this.focusFeed();
  }

  goToMessage(message) {
    const terms = message.type === "stream"
      ? [{ operator: "channel", operand: message.stream_id }, { operator: "topic", operand: message.subject }]
      : [{ operator: "dm", operand: message.display_recipient.map((u) => u.id) }];
    this.narrow([...terms, { operator: "near", operand: message.id }]);
  }

  // Topics of a channel come from the server the first time the channel is shown.
  ensureTopics(streamId) {
    if (this.topicRequests.has(streamId)) return;
    this.topicRequests.add(streamId);
    api.get(`/users/me/${streamId}/topics`).then((data) => {
      for (const t of data.topics || []) this.state.subs.noteTopic(streamId, t.name, t.max_id);
      this.render(new Set(["sidebar"]));
      this.compose.refreshTopics();
    }).catch(() => this.topicRequests.delete(streamId));
  }

  // ---- selection and shortcuts --------------------------------------------------------------

  select(id, { scroll = true } = {}) {
    const previous = this.selectedId;
    this.selectedId = id;
    const el = this.feed.setSelected(id, previous);
    if (el && scroll) {
      el.scrollIntoView({ block: "nearest" });
      el.focus({ preventScroll: true });
    }
  }

  moveSelection(step) {
    const ids = this.feed.list ? this.feed.list.ids : [];
    if (!ids.length) return;
    const at = ids.indexOf(this.selectedId);
    const next = at < 0 ? ids.length - 1 : Math.max(0, Math.min(ids.length - 1, at + step));
    this.select(ids[next]);
  }

  replyTo(id, content) {
    const message = this.state.messages.get(id);
    if (!message) return;
    if (message.type === "stream") this.compose.start("stream", { streamId: message.stream_id, topic: message.subject });
    else this.compose.start("dm", { userIds: message.display_recipient.map((u) => u.id) });
    if (content) {
      const ta = this.compose.content;
      ta.value = (ta.value ? ta.value + "\n" : "") + content;
      ta.setSelectionRange(ta.value.length, ta.value.length);
      this.compose.onInput();
    }
  }

  composeNewTopic() {
    const channel = this.current.terms.find((t) => t.operator === "channel" && !t.negated);
    const message = this.selectedId && this.state.messages.get(this.selectedId);
    const streamId = channel ? channel.operand : message && message.type === "stream" ? message.stream_id : undefined;
    this.compose.start("stream", { streamId, topic: "" });
  }

  nextUnreadTopic() {
    const conversations = this.state.unread.conversations().filter((c) => c.type === "stream" && !this.state.subs.isTopicMuted(c.stream_id, c.topic));
    const currentKey = typingKeyForNarrow(this.current.terms, this.state.myId);
    const next = conversations.find((c) => `s:${c.stream_id}:${c.topic.toLowerCase()}` !== currentKey);
    if (!next) {
      toast(t("No more unread topics"));
      return;
    }
    this.narrow([{ operator: "channel", operand: next.stream_id, negated: false }, { operator: "topic", operand: next.topic, negated: false }]);
  }

  // Shows a message the moment it is sent, greyed, at the end of the feeds it belongs in;
  // the server's copy replaces it when its event arrives (store/dispatch.js), or it goes away
  // if the send fails. A reconnect's fresh state has none: the server's copies are fetched.
  echo(target, text, localId) {
    const state = this.state;
    const me = state.users.get(state.myId) || {};
    const message = {
      sender_id: state.myId,
      sender_full_name: me.full_name,
      avatar_url: me.avatar_url,
      timestamp: Date.now() / 1000,
      raw_text: text,
      flags: ["read"],
      reactions: [],
      ...(target.type === "stream"
        ? { type: "stream", stream_id: target.to, subject: target.topic, display_recipient: state.subs.name(target.to) }
        : { type: "private", display_recipient: [...new Set([...target.to, state.myId])].map((id) => ({ id, full_name: state.users.name(id) })) }),
    };
    state.messages.addEcho(localId, message);
    if (this.feed.list && this.feed.list.foundNewest) this.stickToBottom = true;
    this.render(new Set(["feed"]));
  }

  dropEcho(localId) {
    if (this.state && this.state.messages.dropEcho(localId)) this.render(new Set(["feed"]));
  }

  noteSent(target) {
    if (this.current.view !== "narrow" && this.current.view !== "feed") return;
    const probe = target.type === "stream"
      ? { type: "stream", stream_id: target.to, subject: target.topic, sender_id: this.state.myId, flags: ["read"] }
      : { type: "private", display_recipient: [...target.to, this.state.myId].map((id) => ({ id })), sender_id: this.state.myId, flags: ["read"] };
    if (messageMatches(this.current.terms, probe, this.state.myId) === false) {
      // A toast holds no markup: the channel and topic are isolated as in the page title.
      toast(target.type === "stream"
        ? t("Sent to {channel} > {topic} (not shown in this view)", { channel: isolateText(`#${this.state.subs.name(target.to)}`), topic: isolateText(target.topic) })
        : t("Sent to the direct message (not shown in this view)"));
    }
  }

  focusFeed() {
    const el = this.selectedId && this.feed.elements.get(this.selectedId);
    (el || document.getElementById("main")).focus({ preventScroll: Boolean(el) });
  }

  focusSearch() {
    const input = document.getElementById("search-input");
    input.focus();
    input.select();
  }

  async openSettings(tab, streamId) {
    // Settings are a separate module, loaded only when opened.
    const [{ openSettings }] = await Promise.all([import("./views/settings.js"), this.usersReady()]);
    openSettings(this, tab, streamId);
  }

}

const app = new App();
window.palaver = app; // for debugging from the console, and for the browser tests
app.start();
