// The app's state, built from one POST /register response. Event application lives in
// dispatch.js; views read from here.

import { dmKeyIds } from "../narrow.js";
import { Messages } from "./messages.js";
import { Permissions } from "./permissions.js";
import { Presence } from "./presence.js";
import { Subscriptions } from "./subscriptions.js";
import { Unread } from "./unread.js";
import { Users } from "./users.js";

export const EVENT_TYPES = [
  "message", "update_message", "delete_message", "reaction", "update_message_flags", "subscription", "stream",
  "realm", "realm_user", "typing", "presence", "user_settings", "drafts", "user_group", "realm_emoji",
  "recent_private_conversations", "starred_messages", "user_topic", "user_status", "submessage", "heartbeat", "restart",
  // For the settings panels (bots, linkifiers, playgrounds, default channels and their groups).
  "realm_bot", "realm_linkifiers", "realm_playgrounds", "default_streams", "default_stream_groups",
];

// State sections fetched at register whose name differs from their event's type.
export const FETCH_TYPES = [...EVENT_TYPES, "realm_user_groups"];

// What the app's /register fetches: all but the user list (at 10,000 users 4 of its 6.5 MB
// and most of its parsing), which the first screen does without and GET /users brings
// once it is drawn, and ``streams``, the same channel objects again (0.85 MB) that the
// subscription state lists as subscribed, unsubscribed or never subscribed. The queue
// still hears every event type (EVENT_TYPES).
export const FIRST_FETCH_TYPES = FETCH_TYPES.filter((type) => type !== "realm_user" && type !== "stream");

// ``ownUser``: the signed-in user (GET /users/me), for a register without realm_users.
export function createState(reg, me, ownUser = null) {
  const myId = reg.user_id ?? me.user_id;
  const realm = {};
  for (const [key, value] of Object.entries(reg)) if (key.startsWith("realm_") || key.startsWith("max_") || key.startsWith("server_")) realm[key] = value;
  const users = new Users(reg.realm_users || null, myId);
  if (ownUser) users.note(ownUser);
  const meUser = users.get(myId);
  const role = meUser ? meUser.role : 400;
  const state = {
    queueId: reg.queue_id,
    myId,
    realm,
    settings: { ...(reg.user_settings || {}) },
    users,
    presence: new Presence(reg.presences, reg.server_timestamp, reg.presence_last_update_id),
    subs: new Subscriptions(reg),
    unread: new Unread(reg.unread_msgs, myId),
    messages: new Messages(myId),
    groups: reg.realm_user_groups || [],
    emoji: reg.realm_emoji || {},
    // dm key ("3,7") -> newest message id
    recentDms: new Map(),
    drafts: new Map((reg.drafts || []).map((d) => [d.id, d])),
    // conversation key -> Map(user id -> expiry ms)
    typing: new Map(),
    maxMessageId: reg.max_message_id || 0,
    // user id -> {status_text, emoji_name, emoji_code, reaction_type, away}
    statuses: new Map(Object.entries(reg.user_status || {}).map(([id, status]) => [Number(id), status])),
  };
  state.permissions = new Permissions(realm, myId, state.groups, role <= 300);
  for (const c of reg.recent_private_conversations || []) {
    state.recentDms.set(dmKeyIds(c.user_ids, myId).join(","), c.max_message_id);
  }
  return state;
}

// The whole user list arrived (GET /users; an array, or a UserListLoad given it in
// slices): permissions follow the role it gives.
export function loadUsers(state, members) {
  state.users.load(members);
  const meUser = state.users.get(state.myId);
  state.permissions = new Permissions(state.realm, state.myId, state.groups, Boolean(meUser && meUser.role <= 300));
}

export function isAdmin(state) {
  return state.users.isAdmin(state.myId);
}
