// Channels: the ones I am subscribed to, the others I can see, and the topics I know of.

import { nameSlug } from "../narrow.js";
import { byName } from "./users.js";

function topicKey(topic) {
  return String(topic).toLowerCase();
}

// A topic's visibility policy (user_topics), as the API numbers them.
export const INHERIT = 0;
export const MUTED = 1;
export const UNMUTED = 2;
export const FOLLOWED = 3;

export class Subscriptions {
  constructor({ subscriptions = [], unsubscribed = [], never_subscribed = [], streams = [], user_topics = [] } = {}) {
    this.subs = new Map();
    this.streams = new Map();
    for (const stream of [...streams, ...unsubscribed, ...never_subscribed]) this.streams.set(stream.stream_id, { ...stream });
    for (const sub of subscriptions) this.addSub(sub);
    // stream_id -> Map(topic key -> {name, maxId})
    this.topics = new Map();
    // Channels whose topic list was fetched from the server (not only learned from messages).
    this.topicsFetched = new Set();
    // "stream_id:topic key" -> visibility policy other than INHERIT.
    this.policies = new Map();
    for (const ut of user_topics) this.setPolicy(ut.stream_id, ut.topic_name, ut.visibility_policy);
  }

  setPolicy(streamId, topic, policy) {
    const key = `${streamId}:${topicKey(topic)}`;
    if (policy === INHERIT) this.policies.delete(key);
    else this.policies.set(key, policy);
  }

  policy(streamId, topic) {
    return this.policies.get(`${streamId}:${topicKey(topic)}`) || INHERIT;
  }

  // Muted as the server counts unreads (lib/conversation_muting): a muted topic, or any topic
  // of a muted channel that is not unmuted or followed.
  isTopicMuted(streamId, topic) {
    const policy = this.policy(streamId, topic);
    if (policy === MUTED) return true;
    const sub = this.subs.get(streamId);
    return Boolean(sub && sub.is_muted) && policy !== UNMUTED && policy !== FOLLOWED;
  }

  // Followed topics, newest known message first: [{stream_id, topic}].
  followed() {
    const found = [];
    for (const [key, policy] of this.policies) {
      if (policy !== FOLLOWED) continue;
      const at = key.indexOf(":");
      const streamId = Number(key.slice(0, at));
      const known = (this.topics.get(streamId) || new Map()).get(key.slice(at + 1));
      found.push({ stream_id: streamId, topic: known ? known.name : key.slice(at + 1), maxId: known ? known.maxId : 0 });
    }
    return found.sort((a, b) => b.maxId - a.maxId);
  }

  addSub(sub) {
    this.subs.set(sub.stream_id, { ...sub });
    this.streams.set(sub.stream_id, { ...(this.streams.get(sub.stream_id) || {}), ...sub });
  }

  removeSub(streamId) {
    this.subs.delete(streamId);
  }

  isSubscribed(streamId) {
    return this.subs.has(streamId);
  }

  get(streamId) {
    return this.subs.get(streamId) || this.streams.get(streamId);
  }

  name(streamId) {
    const stream = this.get(streamId);
    return stream ? stream.name : `channel ${streamId}`;
  }

  // The channel of that name, or of that link slug ("design-team" for "design team").
  idByName(name) {
    const wanted = name.toLowerCase();
    for (const stream of this.streams.values()) if (stream.name.toLowerCase() === wanted) return stream.stream_id;
    for (const stream of this.streams.values()) if (nameSlug(stream.name).toLowerCase() === wanted) return stream.stream_id;
    return undefined;
  }

  // Subscribed channels, pinned first, then by name.
  sorted() {
    return [...this.subs.values()].sort(
      (a, b) => Number(Boolean(b.pin_to_top)) - Number(Boolean(a.pin_to_top)) || byName(a.name, b.name),
    );
  }

  allStreams() {
    return [...this.streams.values()].filter((s) => !s.is_archived).sort((a, b) => byName(a.name, b.name));
  }

  search(query, limit = 8) {
    const q = query.toLowerCase();
    return this.allStreams().filter((s) => s.name.toLowerCase().includes(q)).slice(0, limit);
  }

  // Learns a topic from a message (or a fetched topic list); keeps the newest message id.
  noteTopic(streamId, topic, messageId) {
    let topics = this.topics.get(streamId);
    if (!topics) {
      topics = new Map();
      this.topics.set(streamId, topics);
    }
    const key = topicKey(topic);
    const known = topics.get(key);
    if (!known || known.maxId < messageId) topics.set(key, { name: topic, maxId: messageId });
  }

  forgetTopic(streamId, topic) {
    const topics = this.topics.get(streamId);
    if (topics) topics.delete(topicKey(topic));
  }

  // Topics of a channel, most recent first.
  topicsOf(streamId) {
    const topics = this.topics.get(streamId);
    return topics ? [...topics.values()].sort((a, b) => b.maxId - a.maxId) : [];
  }

  // subscription update event: one property of one subscription.
  updateSub(streamId, property, value) {
    const sub = this.subs.get(streamId);
    if (sub) sub[property === "in_home_view" ? "is_muted" : property] = property === "in_home_view" ? !value : value;
  }

  // stream update event: a property of the channel itself (name, description, privacy...).
  updateStream(streamId, property, value) {
    for (const map of [this.subs, this.streams]) {
      const stream = map.get(streamId);
      if (stream) stream[property] = value;
    }
  }

  addStreams(streams) {
    for (const stream of streams) this.streams.set(stream.stream_id, { ...(this.streams.get(stream.stream_id) || {}), ...stream });
  }

  deleteStreams(streams) {
    for (const stream of streams) {
      this.streams.delete(stream.stream_id);
      this.subs.delete(stream.stream_id);
    }
  }
}
