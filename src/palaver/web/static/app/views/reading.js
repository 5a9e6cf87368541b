// Marks messages read as they are seen: on screen (mostly), in a focused, visible window,
// outside search results. Batched into one POST /messages/flags every quarter second.

import { isSearchNarrow } from "../narrow.js";

export class ReadTracker {
  constructor(app, feed) {
    this.app = app;
    this.feed = feed;
    this.pendingRead = new Set();
    this.readTimer = null;
    // A message counts as seen when most of it is visible, or when it fills most of the view.
    this.observer = new IntersectionObserver((entries) => this.onSeen(entries), { root: feed.scroller, threshold: [0, 0.25, 0.6, 1] });
    document.addEventListener("visibilitychange", () => this.flushVisibleUnread());
    window.addEventListener("focus", () => this.flushVisibleUnread());
  }

  // Until the view changes (feed.open resumes it), nothing is marked read by being seen.
  pause() {
    this.paused = this.feed.list;
    this.pendingRead.clear();
  }

  observe(el) {
    this.observer.observe(el);
  }

  disconnect() {
    this.observer.disconnect();
  }

  canMarkRead() {
    return document.visibilityState === "visible" && document.hasFocus() && this.feed.list && this.paused !== this.feed.list && !isSearchNarrow(this.feed.list.terms);
  }

  onSeen(entries) {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const viewHeight = entry.rootBounds ? entry.rootBounds.height : window.innerHeight;
      if (entry.intersectionRatio < 0.6 && entry.intersectionRect.height < viewHeight * 0.5) continue;
      const id = Number(entry.target.dataset.id);
      if (this.app.state.unread.has(id)) this.pendingRead.add(id);
    }
    this.scheduleRead();
  }

  // When the window comes back into view, what is on screen now counts as seen.
  flushVisibleUnread() {
    if (!this.canMarkRead()) return;
    const box = this.feed.scroller.getBoundingClientRect();
    for (const [id, el] of this.feed.elements) {
      if (!this.app.state.unread.has(id)) continue;
      const rect = el.getBoundingClientRect();
      if (rect.top < box.bottom && rect.bottom > box.top) this.pendingRead.add(id);
    }
    this.scheduleRead();
  }

  scheduleRead() {
    if (this.readTimer || !this.pendingRead.size) return;
    this.readTimer = setTimeout(() => this.sendRead(), 250);
  }

  async sendRead() {
    this.readTimer = null;
    if (!this.canMarkRead()) {
      this.pendingRead.clear();
      return;
    }
    const ids = [...this.pendingRead].filter((id) => this.app.state.unread.has(id));
    this.pendingRead.clear();
    if (!ids.length) return;
    // Counts go down at once; the server's update_message_flags event confirms.
    this.app.state.unread.markRead(ids);
    this.app.state.messages.setFlag(ids, "read", true);
    for (const id of ids) {
      const el = this.feed.elements.get(id);
      if (el) {
        el.classList.remove("unread");
        this.observer.unobserve(el);
      }
    }
    this.app.render(new Set(["sidebar"]));
    try {
      await this.app.api.post("/messages/flags", { messages: ids, op: "add", flag: "read" });
    } catch (error) {
      this.app.showError(error);
    }
  }
}
