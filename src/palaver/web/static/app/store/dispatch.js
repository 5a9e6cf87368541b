// Applies one server event to the stores and says what changed, so main.js re-renders only
// the affected views. Pure with respect to the DOM: unit-tested in the browser.
//
// Change tags: "feed" (messages shown), "sidebar" (channels, topics, DMs, counts), "users",
// "typing", "realm", "settings", "drafts", and for the settings panels "bots", "groups",
// "linkifiers", "playgrounds", "default_streams", "default_stream_groups".

import { dmKeyIds, messageDmIds } from "../narrow.js";
import { Permissions } from "./permissions.js";

function typingKeyForEvent(event, myId) {
  if (event.message_type === "stream") return `s:${event.stream_id}:${String(event.topic).toLowerCase()}`;
  return "d:" + dmKeyIds((event.recipients || []).map((r) => r.user_id), myId).join(",");
}

export function typingKeyForNarrow(terms, myId) {
  const channel = terms.find((t) => t.operator === "channel");
  const topic = terms.find((t) => t.operator === "topic");
  const dm = terms.find((t) => t.operator === "dm");
  if (channel && topic) return `s:${channel.operand}:${String(topic.operand).toLowerCase()}`;
  if (dm && Array.isArray(dm.operand)) return "d:" + dmKeyIds(dm.operand, myId).join(",");
  return null;
}

const TYPING_EXPIRY_MS = 15000;

export function applyEvent(state, event, now = Date.now()) {
  const changes = new Set();
  const handler = HANDLERS[event.type];
  if (handler) handler(state, event, changes, now);
  return changes;
}

const HANDLERS = {
  message(state, event, changes) {
    // The sender's own queue names the local_id it sent with: the real message replaces its echo.
    if (event.local_message_id !== undefined) state.messages.dropEcho(event.local_message_id);
    const message = state.messages.insertLive(event.message, event.flags || []);
    state.unread.addMessage(message, event.flags || []);
    state.users.learn(message);
    state.maxMessageId = Math.max(state.maxMessageId, message.id);
    if (message.type === "stream") {
      state.subs.noteTopic(message.stream_id, message.subject, message.id);
      changes.add("topics");
    } else {
      const key = messageDmIds(message, state.myId).join(",");
      state.recentDms.set(key, Math.max(state.recentDms.get(key) || 0, message.id));
    }
    // A message ends its sender's typing notice.
    for (const users of state.typing.values()) if (users.delete(message.sender_id)) changes.add("typing");
    changes.add("feed").add("sidebar");
  },

  update_message(state, event, changes) {
    const moved = state.messages.update(event, (id) => state.subs.name(id));
    if (moved.length) {
      state.unread.move(moved, { streamId: event.new_stream_id, topic: event.subject });
      const newStream = event.new_stream_id ?? event.stream_id;
      if (newStream !== undefined) {
        const topic = event.subject ?? event.orig_subject;
        if (topic !== undefined) state.subs.noteTopic(newStream, topic, Math.max(...moved));
        changes.add("topics");
        // The old topic goes away when every message left it.
        if (event.propagate_mode === "change_all" && event.orig_subject !== undefined) {
          state.subs.forgetTopic(event.stream_id, event.orig_subject);
        }
      }
      changes.add("sidebar").add("feed");
    } else {
      changes.add(`msg:${event.message_id}`);
    }
  },

  delete_message(state, event, changes) {
    const ids = event.message_ids || [event.message_id];
    state.messages.remove(ids);
    state.unread.markRead(ids);
    changes.add("feed").add("sidebar");
  },

  reaction(state, event, changes) {
    if (state.messages.reaction(event)) changes.add(`msg:${event.message_id}`);
  },

  update_message_flags(state, event, changes) {
    const op = event.op || event.operation;
    const on = op === "add";
    if (event.all) state.messages.setFlagAll(event.flag, on);
    else state.messages.setFlag(event.messages, event.flag, on);
    if (event.flag === "read") {
      if (on && event.all) state.unread.markAllRead();
      else if (on) state.unread.markRead(event.messages);
      else state.unread.markUnread(event.messages, event.message_details);
      changes.add("sidebar");
    }
    // One message's look changed (star, read): re-rendered in place, not the whole feed.
    if (event.all || event.messages.length > 50) changes.add("feed");
    else for (const id of event.messages) changes.add(`msg:${id}`);
  },

  subscription(state, event, changes) {
    switch (event.op) {
      case "add":
        for (const sub of event.subscriptions) state.subs.addSub(sub);
        break;
      case "remove":
        for (const sub of event.subscriptions) state.subs.removeSub(sub.stream_id);
        break;
      case "update":
        state.subs.updateSub(event.stream_id, event.property, event.value);
        break;
      default:
        return;
    }
    changes.add("sidebar").add("feed").add("subscriptions");
  },

  stream(state, event, changes) {
    switch (event.op) {
      case "create":
        state.subs.addStreams(event.streams);
        break;
      case "delete":
        state.subs.deleteStreams(event.streams);
        break;
      case "update":
        state.subs.updateStream(event.stream_id, event.property, event.value);
        break;
      default:
        return;
    }
    changes.add("sidebar").add("feed").add("subscriptions");
  },

  realm_user(state, event, changes) {
    if (event.op === "add") state.users.add(event.person);
    else if (event.op === "update") state.users.update(event.person);
    else if (event.op === "remove") state.users.remove(event.person);
    changes.add("users").add("feed").add("sidebar");
  },

  typing(state, event, changes, now) {
    const senderId = event.sender.user_id;
    if (senderId === state.myId) return;
    const key = typingKeyForEvent(event, state.myId);
    let users = state.typing.get(key);
    if (!users) {
      users = new Map();
      state.typing.set(key, users);
    }
    if (event.op === "start") users.set(senderId, now + TYPING_EXPIRY_MS);
    else users.delete(senderId);
    changes.add("typing");
  },

  presence(state, event, changes) {
    if (event.presences) state.presence.merge(event.presences);
    else if (event.user_id && event.presence) {
      // Legacy shape: per client {status, timestamp}; keep the newest of each kind.
      let active = 0;
      let idle = 0;
      for (const client of Object.values(event.presence)) {
        if (client.status === "active") active = Math.max(active, client.timestamp);
        idle = Math.max(idle, client.timestamp);
      }
      state.presence.merge({ [event.user_id]: { active_timestamp: active, idle_timestamp: idle } });
    }
    changes.add("users");
  },

  realm(state, event, changes) {
    if (event.op === "update") state.realm["realm_" + event.property] = event.value;
    else if (event.op === "update_dict") {
      for (const [key, value] of Object.entries(event.data || {})) state.realm["realm_" + key] = value;
    }
    changes.add("realm").add("feed");
  },

  user_settings(state, event, changes) {
    if (event.op === "update") state.settings[event.property] = event.value;
    changes.add("settings");
    // Times and emoji are drawn in every message shown.
    if (event.property === "twenty_four_hour_time" || event.property === "emojiset") changes.add("feed");
  },

  user_group(state, event, changes) {
    const byId = new Map(state.groups.map((g) => [g.id, g]));
    const group = byId.get(event.group_id);
    switch (event.op) {
      case "add":
        state.groups.push(event.group);
        break;
      case "add_members":
        if (group) group.members = [...new Set([...(group.members || []), ...event.user_ids])];
        break;
      case "remove_members":
        if (group) group.members = (group.members || []).filter((id) => !event.user_ids.includes(id));
        break;
      case "add_subgroups":
        if (group) group.direct_subgroup_ids = [...new Set([...(group.direct_subgroup_ids || []), ...event.direct_subgroup_ids])];
        break;
      case "remove_subgroups":
        if (group) group.direct_subgroup_ids = (group.direct_subgroup_ids || []).filter((id) => !event.direct_subgroup_ids.includes(id));
        break;
      case "update":
        if (group) Object.assign(group, event.data || {});
        break;
      case "remove":
        // Deactivated: clients without include_deactivated_groups forget the group.
        state.groups = state.groups.filter((g) => g.id !== event.group_id);
        break;
      default:
        return;
    }
    const me = state.users.get(state.myId);
    state.permissions = new Permissions(state.realm, state.myId, state.groups, Boolean(me && me.role <= 300));
    changes.add("feed").add("groups");
  },

  // Administrators hear of every bot, other people of their own.
  realm_bot(state, event, changes) {
    const bots = state.realm.realm_bots || (state.realm.realm_bots = []);
    const at = bots.findIndex((b) => b.user_id === event.bot.user_id);
    if (event.op === "add") {
      if (at >= 0) bots[at] = event.bot;
      else bots.push(event.bot);
    } else if (event.op === "update" && at >= 0) {
      bots[at] = { ...bots[at], ...event.bot };
    } else if ((event.op === "delete" || event.op === "remove") && at >= 0) {
      bots.splice(at, 1);
    }
    changes.add("bots");
  },

  realm_linkifiers(state, event, changes) {
    state.realm.realm_linkifiers = event.realm_linkifiers || [];
    changes.add("linkifiers");
  },

  realm_playgrounds(state, event, changes) {
    state.realm.realm_playgrounds = event.realm_playgrounds || [];
    changes.add("playgrounds");
  },

  default_streams(state, event, changes) {
    // Channel IDs (objects before feature level 330).
    state.realm.realm_default_streams = (event.default_streams || []).map((s) => (typeof s === "number" ? s : s.stream_id));
    changes.add("default_streams");
  },

  // The whole list, each group's channels as IDs (objects in Zulip's events).
  default_stream_groups(state, event, changes) {
    state.realm.realm_default_stream_groups = (event.default_stream_groups || []).map((group) => ({
      ...group, streams: (group.streams || []).map((s) => (typeof s === "number" ? s : s.stream_id)),
    }));
    changes.add("default_stream_groups");
  },

  realm_emoji(state, event, changes) {
    if (event.realm_emoji) state.emoji = event.realm_emoji;
    changes.add("feed").add("emoji");
  },

  // Each field given replaces the old one; empty text or emoji name clears it.
  user_status(state, event, changes) {
    const status = { ...(state.statuses.get(event.user_id) || {}) };
    for (const key of ["status_text", "emoji_name", "emoji_code", "reaction_type", "away"]) {
      if (event[key] !== undefined) status[key] = event[key];
    }
    if (status.emoji_name === "") {
      delete status.emoji_name;
      delete status.emoji_code;
      delete status.reaction_type;
    }
    if (status.status_text === "") delete status.status_text;
    if (!status.away) delete status.away;
    if (Object.keys(status).length) state.statuses.set(event.user_id, status);
    else state.statuses.delete(event.user_id);
    changes.add("users").add("feed");
  },

  submessage(state, event, changes) {
    const message = state.messages.get(event.message_id);
    if (!message) return;
    const subs = message.submessages || (message.submessages = []);
    if (subs.some((s) => s.id === event.submessage_id)) return;
    subs.push({ id: event.submessage_id, message_id: event.message_id, sender_id: event.sender_id, msg_type: event.msg_type, content: event.content });
    changes.add(`msg:${event.message_id}`);
  },

  user_topic(state, event, changes) {
    state.subs.setPolicy(event.stream_id, event.topic_name, event.visibility_policy);
    changes.add("sidebar").add("feed");
  },

  drafts(state, event, changes) {
    if (event.op === "add") for (const d of event.drafts) state.drafts.set(d.id, d);
    else if (event.op === "update") state.drafts.set(event.draft.id, event.draft);
    else if (event.op === "remove") state.drafts.delete(event.draft_id);
    changes.add("drafts");
  },
};

// Drops typing notices whose sender went quiet without a stop event.
export function expireTyping(state, now = Date.now()) {
  let changed = false;
  for (const users of state.typing.values()) {
    for (const [id, expiry] of users) {
      if (expiry <= now) {
        users.delete(id);
        changed = true;
      }
    }
  }
  return changed;
}
