// Presence in the modern ("slim") format: per user the last active and idle timestamps.

// Zulip clients consider a user offline when not heard from for this long.
export const OFFLINE_SECONDS = 140;

export class Presence {
  constructor(presences = {}, serverTimestamp = Date.now() / 1000, lastUpdateId = -1) {
    this.byId = new Map();
    // Client clocks drift; compare against the server's clock.
    this.clockOffset = serverTimestamp - Date.now() / 1000;
    // The newest presence change held; a poll asks the server only for newer ones.
    this.lastUpdateId = lastUpdateId ?? -1;
    this.merge(presences);
  }

  // A POST /users/me/presence answer: what changed, and where the next poll starts.
  absorb(answer) {
    this.merge(answer.presences);
    if (typeof answer.presence_last_update_id === "number") this.lastUpdateId = answer.presence_last_update_id;
  }

  merge(presences) {
    for (const [id, value] of Object.entries(presences || {})) {
      this.byId.set(Number(id), { active_timestamp: value.active_timestamp || 0, idle_timestamp: value.idle_timestamp || 0 });
    }
  }

  now() {
    return Date.now() / 1000 + this.clockOffset;
  }

  // "active", "idle" or "offline".
  status(userId, now = this.now()) {
    const p = this.byId.get(userId);
    if (!p) return "offline";
    if (now - p.active_timestamp < OFFLINE_SECONDS) return "active";
    if (now - p.idle_timestamp < OFFLINE_SECONDS) return "idle";
    return "offline";
  }
}
