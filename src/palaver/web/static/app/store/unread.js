// Unread messages: which ids are unread and where they are, so the sidebar, the title and
// the Inbox can count them. Filled from the register state's unread_msgs, then kept up to
// date by message, update_message_flags, update_message and delete_message events.

import { dmKeyIds, messageDmIds } from "../narrow.js";

export function topicCountKey(streamId, topic) {
  return `${streamId}\u0000${String(topic).toLowerCase()}`;
}

export class Unread {
  constructor(unreadMsgs = {}, myId = 0) {
    this.myId = myId;
    // id -> {type: "stream", stream_id, topic} | {type: "private", dm: "3,7"}
    this.entries = new Map();
    this.mentions = new Set();
    // Mentioned only through @all/@channel/@topic: they count only outside muted conversations.
    this.wildcards = new Set();
    for (const s of unreadMsgs.streams || []) {
      for (const id of s.unread_message_ids) this.entries.set(id, { type: "stream", stream_id: s.stream_id, topic: s.topic });
    }
    for (const p of unreadMsgs.pms || []) {
      const dm = dmKeyIds([p.other_user_id ?? p.sender_id], myId).join(",");
      for (const id of p.unread_message_ids) this.entries.set(id, { type: "private", dm });
    }
    for (const h of unreadMsgs.huddles || []) {
      const dm = dmKeyIds(h.user_ids_string.split(",").map(Number), myId).join(",");
      for (const id of h.unread_message_ids) this.entries.set(id, { type: "private", dm });
    }
    for (const id of unreadMsgs.mentions || []) if (this.entries.has(id)) this.mentions.add(id);
  }

  has(id) {
    return this.entries.has(id);
  }

  // A new or fetched message with its flags.
  addMessage(message, flags = message.flags || []) {
    if (flags.includes("read")) return;
    if (message.type === "stream") {
      this.entries.set(message.id, { type: "stream", stream_id: message.stream_id, topic: message.subject });
    } else {
      this.entries.set(message.id, { type: "private", dm: messageDmIds(message, this.myId).join(",") });
    }
    if (flags.includes("mentioned")) this.mentions.add(message.id);
    else if (flags.includes("wildcard_mentioned")) this.wildcards.add(message.id);
  }

  markRead(ids) {
    for (const id of ids) {
      this.entries.delete(id);
      this.mentions.delete(id);
      this.wildcards.delete(id);
    }
  }

  markAllRead() {
    this.entries.clear();
    this.mentions.clear();
    this.wildcards.clear();
  }

  // update_message_flags remove "read": message_details says where each message lives.
  markUnread(ids, details = {}) {
    for (const id of ids) {
      const d = details[id] || details[String(id)];
      if (!d) continue;
      if (d.type === "stream") this.entries.set(id, { type: "stream", stream_id: d.stream_id, topic: d.topic });
      else this.entries.set(id, { type: "private", dm: dmKeyIds(d.user_ids || [], this.myId).join(",") });
      if (d.mentioned) this.mentions.add(id);
    }
  }

  // Moved messages keep their unread state in their new place.
  move(ids, { streamId, topic }) {
    for (const id of ids) {
      const entry = this.entries.get(id);
      if (!entry || entry.type !== "stream") continue;
      if (streamId !== undefined) entry.stream_id = streamId;
      if (topic !== undefined) entry.topic = topic;
    }
  }

  // All counts at once, as the server counts them: unread in muted conversations
  // (isMuted(streamId, topic)) count towards no total, nor their channel, but stay listed by
  // topic; a muted channel's topics that are not muted count in its mutedByStream.
  counts(isMuted = () => false) {
    const byStream = new Map();
    const mutedByStream = new Map();
    const byTopic = new Map();
    const byDm = new Map();
    let total = 0;
    let dms = 0;
    const mutedIds = new Set();
    for (const [id, entry] of this.entries) {
      if (entry.type === "stream") {
        const key = topicCountKey(entry.stream_id, entry.topic);
        byTopic.set(key, (byTopic.get(key) || 0) + 1);
        if (isMuted(entry.stream_id, entry.topic)) {
          mutedIds.add(id);
          mutedByStream.set(entry.stream_id, (mutedByStream.get(entry.stream_id) || 0) + 1);
          continue;
        }
        byStream.set(entry.stream_id, (byStream.get(entry.stream_id) || 0) + 1);
        total += 1;
      } else {
        byDm.set(entry.dm, (byDm.get(entry.dm) || 0) + 1);
        dms += 1;
        total += 1;
      }
    }
    let mentions = this.mentions.size;
    for (const id of this.wildcards) if (this.entries.has(id) && !mutedIds.has(id)) mentions += 1;
    return { total, dms, mentions, byStream, mutedByStream, byTopic, byDm };
  }

  // Unread conversations in id order: the "n" shortcut's next unread topic.
  conversations() {
    const seen = new Map();
    const ids = [...this.entries.keys()].sort((a, b) => a - b);
    for (const id of ids) {
      const e = this.entries.get(id);
      const key = e.type === "stream" ? "s" + topicCountKey(e.stream_id, e.topic) : "d" + e.dm;
      if (!seen.has(key)) seen.set(key, { ...e, firstId: id, count: 0 });
      seen.get(key).count += 1;
    }
    return [...seen.values()];
  }

  idsWhere(predicate) {
    return [...this.entries].filter(([, e]) => predicate(e)).map(([id]) => id);
  }
}
