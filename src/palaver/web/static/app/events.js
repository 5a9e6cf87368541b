// The live connection: POST /register, then long-poll GET /events for ever.
//
// A queue the server no longer knows (BAD_EVENT_QUEUE_ID, e.g. after a restart) means
// registering again and rebuilding the state — no page reload. Network failures retry the
// same queue with exponential backoff; the app shows "Reconnecting…" meanwhile.

import { get, post, ApiError } from "./api.js";
import { t } from "./i18n.js";

export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 10000;

// Delay before retry number `attempt` (0-based), with ±25% jitter so clients spread out.
export function backoffDelay(attempt, random = Math.random) {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempt);
  return Math.round(base * (0.75 + random() * 0.5));
}

export class EventLoop {
  // onRegister(reg) builds the state; onEvents(events) applies them; onStatus("live"|"reconnecting").
  constructor({ eventTypes, fetchTypes = eventTypes, registerParams = {}, onRegister, onEvents, onStatus }) {
    this.eventTypes = eventTypes;
    this.fetchTypes = fetchTypes;
    this.registerParams = registerParams;
    this.onRegister = onRegister;
    this.onEvents = onEvents;
    this.onStatus = onStatus;
    this.queueId = null;
    this.lastEventId = -1;
    this.failures = 0;
    this.stopped = false;
    this.controller = null;
    this.wake = null;
    window.addEventListener("online", () => this.retryNow());
  }

  async register() {
    const reg = await post("/register", {
      apply_markdown: true,
      client_gravatar: false,
      slim_presence: true,
      include_subscribers: false,
      event_types: this.eventTypes,
      fetch_event_types: this.fetchTypes,
      client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: false, stream_typing_notifications: true, user_settings_object: true },
      ...this.registerParams,
    });
    this.queueId = reg.queue_id;
    this.lastEventId = reg.last_event_id;
    this.timeoutMs = ((reg.event_queue_longpoll_timeout_seconds || 90) + 10) * 1000;
    await this.onRegister(reg);
    return reg;
  }

  async start() {
    while (!this.stopped) {
      try {
        if (!this.queueId) await this.register();
        await this.poll();
        if (this.failures) {
          this.failures = 0;
          this.onStatus("live");
        }
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof ApiError && error.code === "BAD_EVENT_QUEUE_ID") {
          this.queueId = null;
          continue;
        }
        if (error instanceof ApiError && error.status === 401) return; // on its way to the login page
        this.onStatus("reconnecting");
        await this.sleep(backoffDelay(this.failures));
        this.failures += 1;
      }
    }
  }

  async poll() {
    this.controller = new AbortController();
    const timer = setTimeout(() => this.controller.abort(), this.timeoutMs || 100000);
    let data;
    try {
      data = await get("/events", { queue_id: this.queueId, last_event_id: this.lastEventId }, { signal: this.controller.signal });
    } catch (error) {
      if (error.name === "AbortError") throw new ApiError(t("Long-poll timed out"), { code: "TIMEOUT" });
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const events = data.events || [];
    if (events.length) {
      this.lastEventId = Math.max(this.lastEventId, ...events.map((e) => e.id));
      this.onEvents(events);
    }
  }

  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  // The browser says the network is back: do not wait for the backoff to run out.
  retryNow() {
    if (this.wake) this.wake();
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
  }
}
