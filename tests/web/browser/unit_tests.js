// Unit tests of the web client's pure logic, run in Chromium by test_unit.py. The page sets
// window.unitResults = [{name, ok, error}] when every test has run.

import { parseSearch, formatSearch, resolveTerms, narrowToHash, parseHash, encodeHashComponent, decodeHashComponent, messageMatches, narrowKey, apiNarrow, anchorOf, narrowTitle, dmKeyIds } from "/static/app/narrow.js";
import { Unread, topicCountKey } from "/static/app/store/unread.js";
import { createState, loadUsers, FETCH_TYPES, FIRST_FETCH_TYPES } from "/static/app/store/state.js";
import { UserListLoad } from "/static/app/store/users.js";
import { applyEvent, typingKeyForNarrow, expireTyping } from "/static/app/store/dispatch.js";
import { userInGroupSetting } from "/static/app/store/permissions.js";
import { backoffDelay, BACKOFF_MAX_MS } from "/static/app/events.js";
import { encodeParams, getInSlices, ApiError } from "/static/app/api.js";
import { currentToken } from "/static/app/views/autocomplete.js";
import { Presence } from "/static/app/store/presence.js";
import { Subscriptions } from "/static/app/store/subscriptions.js";
import { setHtml } from "/static/app/views/dom.js";
import { notificationTitle } from "/static/app/notify.js";
import { Messages, MessageList, LIVE_LIST_KEEP, LIVE_LIST_MAX } from "/static/app/store/messages.js";

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

function eq(actual, expected, message = "") {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${message} expected ${e}, got ${a}`);
}

const ME = 10;
const lookup = {
  myId: ME,
  channelName: (id) => ({ 1: "general", 2: "design team" })[id],
  // As Subscriptions.idByName: a name, or its link slug.
  channelId: (name) => ({ general: 1, "design team": 2, "design-team": 2 })[name.toLowerCase()],
  userName: (id) => ({ 10: "Me", 11: "Iago", 12: "Othello" })[id],
  userEmail: (id) => ({ 10: "me@x.com", 11: "iago@x.com", 12: "othello@x.com" })[id],
  userId: (text) => ({ "iago@x.com": 11, "othello@x.com": 12 })[text],
};

// ---- rendered content ----------------------------------------------------------------------

test("setHtml shows Unicode emoji as the server's pictures", () => {
  const html = '<p>hi <span aria-label="tada" class="emoji emoji-1f389" role="img" title="tada">:tada:</span></p>';
  const img = setHtml(document.createElement("div"), html).querySelector("span.emoji img");
  eq(img.getAttribute("src"), "/static/generated/emoji/images-google-64/1f389.png");
  eq(img.getAttribute("alt"), ":tada:");
});

// ---- narrow syntax -------------------------------------------------------------------------

test("parseSearch splits operators, quotes and free text", () => {
  eq(parseSearch('channel:general topic:"lunch plans" hello world'), [
    { operator: "channel", operand: "general", negated: false },
    { operator: "topic", operand: "lunch plans", negated: false },
    { operator: "search", operand: "hello world", negated: false },
  ]);
});

test("parseSearch knows negation and the old operator names", () => {
  eq(parseSearch("-is:starred stream:general subject:x pm-with:iago@x.com"), [
    { operator: "is", operand: "starred", negated: true },
    { operator: "channel", operand: "general", negated: false },
    { operator: "topic", operand: "x", negated: false },
    { operator: "dm", operand: "iago@x.com", negated: false },
  ]);
});

test("parseSearch keeps unknown operators and URLs as text", () => {
  eq(parseSearch("foo:bar https://example.com"), [{ operator: "search", operand: "foo:bar https://example.com", negated: false }]);
});

test("resolveTerms turns names into ids", () => {
  eq(resolveTerms(parseSearch("channel:General sender:iago@x.com dm:iago@x.com,othello@x.com sender:me"), lookup), [
    { operator: "channel", operand: 1, negated: false },
    { operator: "sender", operand: 11, negated: false },
    { operator: "dm", operand: [11, 12], negated: false },
    { operator: "sender", operand: 10, negated: false },
  ]);
});

test("resolveTerms reads a channel named by its URL slug", () => {
  eq(resolveTerms(parseHash("#narrow/channel/design-team/topic/lunch").terms, lookup)[0].operand, 2);
  eq(resolveTerms(parseHash("#narrow/channel/general").terms, lookup)[0].operand, 1);
});

test("a channel is found by its name or its link slug, the name first", () => {
  const subs = new Subscriptions({
    streams: [
      { stream_id: 1, name: "front-end team" },
      { stream_id: 2, name: "Design team" },
      { stream_id: 3, name: "design-team" },
    ],
  });
  eq(subs.idByName("front-end-team"), 1);
  eq(subs.idByName("FRONT-END TEAM"), 1);
  eq(subs.idByName("design-team"), 3);
  eq(subs.idByName("design team"), 2);
  eq(subs.idByName("nope"), undefined);
});

test("resolveTerms keeps unknown names as strings", () => {
  eq(resolveTerms(parseSearch("channel:nope"), lookup)[0].operand, "nope");
});

test("formatSearch round-trips through parseSearch", () => {
  const terms = [{ operator: "channel", operand: 2, negated: false }, { operator: "topic", operand: "a b", negated: false }, { operator: "is", operand: "starred", negated: true }, { operator: "search", operand: "hi", negated: false }];
  const text = formatSearch(terms, lookup);
  eq(text, 'channel:"design team" topic:"a b" -is:starred hi');
  eq(resolveTerms(parseSearch(text), lookup), terms);
});

// ---- hashes --------------------------------------------------------------------------------

test("hash component encoding is reversible and URL-safe", () => {
  for (const text of ["lunch plans", "a.b/c%d", "✔ done", "100% sure?"]) {
    const encoded = encodeHashComponent(text);
    if (/[%/ ]/.test(encoded)) throw new Error("unsafe: " + encoded);
    eq(decodeHashComponent(encoded), text);
  }
});

test("narrowToHash writes Zulip-style channel/topic URLs", () => {
  const terms = [{ operator: "channel", operand: 2, negated: false }, { operator: "topic", operand: "lunch plans", negated: false }];
  eq(narrowToHash(terms, lookup), "#narrow/channel/2-design-team/topic/lunch.20plans");
  eq(parseHash("#narrow/channel/2-design-team/topic/lunch.20plans"), { view: "narrow", terms });
});

test("DM, is, search and near hashes parse back", () => {
  eq(narrowToHash([{ operator: "dm", operand: [11, 12], negated: false }]), "#narrow/dm/11,12-group");
  eq(parseHash("#narrow/dm/11,12-group").terms, [{ operator: "dm", operand: [11, 12], negated: false }]);
  eq(parseHash("#narrow/dm/11-iago").terms[0].operand, [11]);
  eq(parseHash("#narrow/is/starred").terms, [{ operator: "is", operand: "starred", negated: false }]);
  eq(parseHash(narrowToHash([{ operator: "search", operand: "50% off", negated: false }])).terms[0].operand, "50% off");
  eq(parseHash("#narrow/stream/1-general/near/99").terms, [{ operator: "channel", operand: 1, negated: false }, { operator: "near", operand: 99, negated: false }]);
  eq(parseHash("#narrow/-is/starred").terms[0].negated, true);
});

test("special views and foreign hashes", () => {
  eq(parseHash("").view, "feed");
  eq(parseHash("#inbox").view, "inbox");
  eq(parseHash("#recent").view, "recent");
  eq(parseHash("#something-else"), null);
  eq(narrowToHash([]), "#feed");
});

test("apiNarrow drops near; anchorOf finds it", () => {
  const terms = [{ operator: "channel", operand: 1 }, { operator: "near", operand: 5 }];
  eq(apiNarrow(terms), [{ operator: "channel", operand: 1, negated: false }]);
  eq(anchorOf(terms), 5);
  eq(anchorOf([]), null);
});

test("narrowKey ignores term order and near", () => {
  eq(narrowKey([{ operator: "topic", operand: "x" }, { operator: "channel", operand: 1 }]),
    narrowKey([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "x" }, { operator: "near", operand: 9 }]));
});

test("narrowTitle", () => {
  eq(narrowTitle([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "t" }], lookup), "#general > t");
  eq(narrowTitle([{ operator: "is", operand: "starred" }], lookup), "Starred messages");
  eq(narrowTitle([], lookup), "All messages");
});

// ---- local matching ------------------------------------------------------------------------

const streamMessage = { id: 1, type: "stream", stream_id: 1, subject: "Lunch", sender_id: 11, flags: [] };
const dmMessage = { id: 2, type: "private", display_recipient: [{ id: 10 }, { id: 11 }], sender_id: 11, flags: ["starred"] };

test("messageMatches channel, topic (case-insensitive), dm, is, negation", () => {
  eq(messageMatches([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "lunch" }], streamMessage, ME), true);
  eq(messageMatches([{ operator: "channel", operand: 2 }], streamMessage, ME), false);
  eq(messageMatches([{ operator: "dm", operand: [11] }], dmMessage, ME), true);
  eq(messageMatches([{ operator: "dm", operand: [11, 12] }], dmMessage, ME), false);
  eq(messageMatches([{ operator: "is", operand: "starred" }], dmMessage, ME), true);
  eq(messageMatches([{ operator: "is", operand: "dm", negated: true }], streamMessage, ME), true);
  eq(messageMatches([], streamMessage, ME), true);
});

test("messageMatches cannot decide full-text search", () => {
  eq(messageMatches([{ operator: "search", operand: "x" }], streamMessage, ME), undefined);
});

test("dmKeyIds drops me except for a note to self", () => {
  eq(dmKeyIds([12, 10, 11], ME), [11, 12]);
  eq(dmKeyIds([10], ME), [10]);
});

// ---- unread counting -----------------------------------------------------------------------

const unreadMsgs = {
  streams: [{ stream_id: 1, topic: "Lunch", unread_message_ids: [5, 6] }, { stream_id: 2, topic: "x", unread_message_ids: [7] }],
  pms: [{ other_user_id: 11, unread_message_ids: [8] }],
  huddles: [{ user_ids_string: "10,11,12", unread_message_ids: [9] }],
  mentions: [6],
};

test("Unread counts by channel, topic, DM, mentions; muted channels not in the total", () => {
  const unread = new Unread(unreadMsgs, ME);
  const counts = unread.counts((streamId) => streamId === 2);
  eq(counts.total, 4);
  eq(counts.byStream.get(2), undefined);
  eq(counts.mutedByStream.get(2), 1);
  eq(counts.byStream.get(1), 2);
  eq(counts.byTopic.get(topicCountKey(1, "lunch")), 2);
  eq(counts.byDm.get("11"), 1);
  eq(counts.byDm.get("11,12"), 1);
  eq(counts.mentions, 1);
});

test("Unread muting follows the topic policies as the server counts them", () => {
  const subs = new Subscriptions({
    subscriptions: [{ stream_id: 1, name: "a", is_muted: false }, { stream_id: 2, name: "b", is_muted: true }],
    user_topics: [{ stream_id: 1, topic_name: "LUNCH", visibility_policy: 1 }, { stream_id: 2, topic_name: "x", visibility_policy: 2 }],
  });
  eq(subs.isTopicMuted(1, "lunch"), true);
  eq(subs.isTopicMuted(1, "other"), false);
  eq(subs.isTopicMuted(2, "x"), false);
  eq(subs.isTopicMuted(2, "y"), true);
  const unread = new Unread(unreadMsgs, ME);
  unread.addMessage({ id: 20, type: "stream", stream_id: 1, subject: "Lunch", flags: ["wildcard_mentioned"] });
  unread.addMessage({ id: 21, type: "stream", stream_id: 1, subject: "Other", flags: ["wildcard_mentioned"] });
  const counts = unread.counts((streamId, topic) => subs.isTopicMuted(streamId, topic));
  // 5, 6, 20 (muted topic) do not count; 7 (unmuted in a muted channel), 21, two DMs do.
  eq(counts.total, 4);
  eq(counts.byStream.get(1), 1);
  eq(counts.byStream.get(2), 1);
  eq(counts.byTopic.get(topicCountKey(1, "lunch")), 3);
  // A direct mention counts even in a muted topic; a wildcard one only outside.
  eq(counts.mentions, 2);
  subs.setPolicy(1, "lunch", 0);
  eq(subs.isTopicMuted(1, "Lunch"), false);
  subs.setPolicy(1, "Lunch", 3);
  eq(subs.followed().map((f) => f.topic), ["lunch"]);
});

test("Unread goes down when read, back up with message_details", () => {
  const unread = new Unread(unreadMsgs, ME);
  unread.markRead([5, 6]);
  eq(unread.counts().byStream.get(1), undefined);
  eq(unread.counts().mentions, 0);
  unread.markUnread([5], { 5: { type: "stream", stream_id: 1, topic: "Lunch", mentioned: true } });
  eq(unread.counts().byStream.get(1), 1);
  eq(unread.counts().mentions, 1);
});

test("Unread conversations are ordered by their oldest unread", () => {
  const unread = new Unread(unreadMsgs, ME);
  eq(unread.conversations().map((c) => c.firstId), [5, 7, 8, 9]);
});

// ---- events applied to the stores ----------------------------------------------------------

function freshState() {
  return createState({
    queue_id: "q", user_id: ME, max_message_id: 4,
    realm_users: [{ user_id: 10, full_name: "Me", email: "me@x.com", role: 400 }, { user_id: 11, full_name: "Iago", email: "iago@x.com", role: 200 }],
    subscriptions: [{ stream_id: 1, name: "general", color: "#c2c2c2" }],
    unread_msgs: { streams: [], pms: [], huddles: [], mentions: [] },
    presences: {}, server_timestamp: Date.now() / 1000,
    realm_user_groups: [], recent_private_conversations: [],
  }, { user_id: ME });
}

function messageEvent(id, extra = {}, flags = []) {
  return { type: "message", flags, message: { id, type: "stream", stream_id: 1, display_recipient: "general", subject: "t", sender_id: 11, sender_full_name: "Iago", content: "<p>hi</p>", reactions: [], timestamp: 1, ...extra } };
}

test("settings-panel events: bots, linkifiers, playgrounds, default channels, groups", () => {
  const state = freshState();
  eq([...applyEvent(state, { type: "realm_bot", op: "add", bot: { user_id: 50, full_name: "B", api_key: "k1", is_active: true } })], ["bots"]);
  applyEvent(state, { type: "realm_bot", op: "update", bot: { user_id: 50, api_key: "k2" } });
  eq(state.realm.realm_bots, [{ user_id: 50, full_name: "B", api_key: "k2", is_active: true }]);
  applyEvent(state, { type: "realm_bot", op: "delete", bot: { user_id: 50 } });
  eq(state.realm.realm_bots, []);
  eq([...applyEvent(state, { type: "realm_linkifiers", realm_linkifiers: [{ id: 1, pattern: "p", url_template: "u" }] })], ["linkifiers"]);
  eq(state.realm.realm_linkifiers.length, 1);
  eq([...applyEvent(state, { type: "realm_playgrounds", realm_playgrounds: [] })], ["playgrounds"]);
  applyEvent(state, { type: "default_streams", default_streams: [3, { stream_id: 4 }] });
  eq(state.realm.realm_default_streams, [3, 4]);
  applyEvent(state, { type: "default_stream_groups", default_stream_groups: [{ id: 1, name: "Product", description: "", streams: [5, { stream_id: 6 }] }] });
  eq(state.realm.realm_default_stream_groups, [{ id: 1, name: "Product", description: "", streams: [5, 6] }]);
  applyEvent(state, { type: "user_group", op: "add", group: { id: 7, name: "g", description: "", members: [10], direct_subgroup_ids: [] } });
  eq([...applyEvent(state, { type: "user_group", op: "update", group_id: 7, data: { name: "h", description: "d" } })].sort(), ["feed", "groups"]);
  eq([state.groups[0].name, state.groups[0].description], ["h", "d"]);
  applyEvent(state, { type: "user_group", op: "remove", group_id: 7 });
  eq(state.groups, []);
});

test("message event: stored, listed in matching loaded narrows, counted unread, topic learned", () => {
  const state = freshState();
  const list = state.messages.list([{ operator: "channel", operand: 1 }]);
  list.foundNewest = true;
  const other = state.messages.list([{ operator: "channel", operand: 2 }]);
  other.foundNewest = true;
  const changes = applyEvent(state, messageEvent(5, {}, ["mentioned"]));
  eq([...changes].sort(), ["feed", "sidebar", "topics"]);
  eq(list.ids, [5]);
  eq(other.ids, []);
  eq(state.unread.counts().byStream.get(1), 1);
  eq(state.unread.counts().mentions, 1);
  eq(state.subs.topicsOf(1).map((t) => t.name), ["t"]);
});

test("a message being sent shows in its narrows until my own message event names its local id", () => {
  const state = freshState();
  const channel = state.messages.list([{ operator: "channel", operand: 1 }]);
  channel.foundNewest = true;
  const older = state.messages.list([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "t" }]);
  const elsewhere = state.messages.list([{ operator: "channel", operand: 2 }]);
  elsewhere.foundNewest = true;
  state.messages.addEcho("77", { type: "stream", stream_id: 1, subject: "t", sender_id: ME, flags: ["read"], raw_text: "hi" });
  eq(state.messages.echoesFor(channel).map((m) => [m.local_id, m.locally_echoed]), [["77", true]]);
  eq(state.messages.echoesFor(older).length, 0, "a list short of the newest shows none");
  eq(state.messages.echoesFor(elsewhere).length, 0);
  applyEvent(state, { ...messageEvent(5, { sender_id: ME }, ["read"]), local_message_id: "76" });
  eq(state.messages.echoesFor(channel).length, 1, "another send's event leaves it");
  applyEvent(state, { ...messageEvent(6, { sender_id: ME }, ["read"]), local_message_id: "77" });
  eq(state.messages.echoesFor(channel).length, 0);
  eq(channel.ids, [5, 6]);
  eq(state.messages.dropEcho("77"), false);
});

test("an edit being saved shows as typed until the server's update_message brings the rendered content", () => {
  const state = freshState();
  applyEvent(state, messageEvent(5, { sender_id: ME }, ["read"]));
  state.messages.get(5).pending_edit = "new *text*";
  applyEvent(state, { type: "update_message", message_id: 5, message_ids: [5], flags: ["read"], edit_timestamp: 2, rendering_only: false, rendered_content: "<p>new <em>text</em></p>", content: "new *text*" });
  eq(state.messages.get(5).pending_edit, undefined);
  eq(state.messages.get(5).content, "<p>new <em>text</em></p>");
});

test("a fetched copy asked for before an event does not undo it; one asked for after does replace", () => {
  const state = freshState();
  const old = { id: 7, type: "stream", stream_id: 1, subject: "t", content: "<p>placeholder</p>", flags: [], reactions: [] };
  eq(state.messages.store([old], 0), [7]);
  const asked = state.messages.stamp;
  applyEvent(state, { type: "update_message", message_id: 7, message_ids: [7], flags: [], edit_timestamp: 2, rendering_only: true, rendered_content: "<p>thumbnail</p>" });
  // A response to a request sent before the event: the event's content stays.
  eq(state.messages.store([{ ...old, match_content: "<p>m</p>" }], asked), []);
  eq(state.messages.get(7).content, "<p>thumbnail</p>");
  eq(state.messages.get(7).match_content, "<p>m</p>");
  // A request sent after it: what the server says now, and only a real change is reported.
  const after = state.messages.stamp;
  eq(state.messages.store([{ ...old, content: "<p>thumbnail</p>" }], after), []);
  eq(state.messages.store([{ ...old, content: "<p>edited</p>" }], after), [7]);
  eq(state.messages.get(7).content, "<p>edited</p>");
});

test("a read message (my own) is not counted unread; DM updates recent conversations", () => {
  const state = freshState();
  applyEvent(state, { type: "message", flags: ["read"], message: { id: 6, type: "private", display_recipient: [{ id: 10 }, { id: 11 }], sender_id: 10, subject: "", reactions: [] } });
  eq(state.unread.counts().total, 0);
  eq(state.recentDms.get("11"), 6);
});

test("update_message_flags read/unread and starred", () => {
  const state = freshState();
  applyEvent(state, messageEvent(5));
  applyEvent(state, { type: "update_message_flags", op: "add", flag: "read", messages: [5], all: false });
  eq(state.unread.counts().total, 0);
  applyEvent(state, { type: "update_message_flags", op: "remove", flag: "read", messages: [5], all: false, message_details: { 5: { type: "stream", stream_id: 1, topic: "t" } } });
  eq(state.unread.counts().total, 1);
  applyEvent(state, { type: "update_message_flags", op: "add", flag: "starred", messages: [5], all: false });
  eq(state.messages.get(5).flags.includes("starred"), true);
});

test("reaction add and remove", () => {
  const state = freshState();
  applyEvent(state, messageEvent(5));
  const reaction = { type: "reaction", message_id: 5, emoji_name: "tada", emoji_code: "1f389", reaction_type: "unicode_emoji", user_id: 10 };
  applyEvent(state, { ...reaction, op: "add" });
  applyEvent(state, { ...reaction, op: "add" });
  eq(state.messages.get(5).reactions.length, 1);
  applyEvent(state, { ...reaction, op: "remove" });
  eq(state.messages.get(5).reactions.length, 0);
});

test("update_message edits content and moves messages between topics", () => {
  const state = freshState();
  const oldTopic = state.messages.list([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "t" }]);
  oldTopic.foundNewest = true;
  oldTopic.foundOldest = true;
  const newTopic = state.messages.list([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "new" }]);
  newTopic.foundNewest = true;
  newTopic.foundOldest = true;
  applyEvent(state, messageEvent(5));
  applyEvent(state, { type: "update_message", message_id: 5, message_ids: [5], rendered_content: "<p>edited</p>", content: "edited", edit_timestamp: 99, user_id: 11, flags: [] });
  eq(state.messages.get(5).content, "<p>edited</p>");
  eq(state.messages.get(5).last_edit_timestamp, 99);
  applyEvent(state, { type: "update_message", message_id: 5, message_ids: [5], stream_id: 1, orig_subject: "t", subject: "new", propagate_mode: "change_all", edit_timestamp: 100, user_id: 11, flags: [] });
  eq(oldTopic.ids, []);
  eq(newTopic.ids, [5]);
  eq(state.unread.counts().byTopic.get(topicCountKey(1, "new")), 1);
  eq(state.subs.topicsOf(1).map((t) => t.name), ["new"]);
});

test("delete_message removes from lists and unread", () => {
  const state = freshState();
  const list = state.messages.list([]);
  list.foundNewest = true;
  applyEvent(state, messageEvent(5));
  applyEvent(state, { type: "delete_message", message_type: "stream", message_ids: [5], stream_id: 1, topic: "t" });
  eq(list.ids, []);
  eq(state.unread.counts().total, 0);
});

test("subscription, stream, realm_user, realm, user_settings events", () => {
  const state = freshState();
  applyEvent(state, { type: "subscription", op: "add", subscriptions: [{ stream_id: 2, name: "design", color: "#fff" }] });
  eq(state.subs.isSubscribed(2), true);
  applyEvent(state, { type: "stream", op: "update", stream_id: 2, property: "name", value: "design team" });
  eq(state.subs.name(2), "design team");
  applyEvent(state, { type: "subscription", op: "update", stream_id: 2, property: "is_muted", value: true });
  eq(state.subs.get(2).is_muted, true);
  applyEvent(state, { type: "subscription", op: "remove", subscriptions: [{ stream_id: 2, name: "design team" }] });
  eq(state.subs.isSubscribed(2), false);
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: 11, full_name: "Iago the Great" } });
  eq(state.users.name(11), "Iago the Great");
  applyEvent(state, { type: "realm_user", op: "add", person: { user_id: 12, full_name: "Othello", email: "o@x.com", role: 400 } });
  eq(state.users.active().length, 3);
  applyEvent(state, { type: "realm", op: "update", property: "name", value: "New name" });
  eq(state.realm.realm_name, "New name");
  applyEvent(state, { type: "realm", op: "update_dict", property: "default", data: { allow_message_editing: false } });
  eq(state.realm.realm_allow_message_editing, false);
  applyEvent(state, { type: "user_settings", op: "update", property: "color_scheme", value: 3 });
  eq(state.settings.color_scheme, 3);
});

test("typing start/stop and expiry", () => {
  const state = freshState();
  const event = { type: "typing", message_type: "stream", sender: { user_id: 11, email: "iago@x.com" }, stream_id: 1, topic: "T" };
  applyEvent(state, { ...event, op: "start" }, 1000);
  const key = typingKeyForNarrow([{ operator: "channel", operand: 1 }, { operator: "topic", operand: "t" }], ME);
  eq([...state.typing.get(key).keys()], [11]);
  applyEvent(state, { ...event, op: "stop" });
  eq(state.typing.get(key).size, 0);
  applyEvent(state, { ...event, op: "start" }, 1000);
  eq(expireTyping(state, 1000 + 60000), true);
  eq(state.typing.get(key).size, 0);
});

test("presence events and statuses", () => {
  const state = freshState();
  const now = state.presence.now();
  applyEvent(state, { type: "presence", presences: { 11: { active_timestamp: Math.floor(now) - 10, idle_timestamp: Math.floor(now) - 10 } } });
  eq(state.presence.status(11), "active");
  eq(state.presence.status(12), "offline");
  const idle = new Presence({ 5: { active_timestamp: 0, idle_timestamp: 1000 } }, 1050);
  eq(idle.status(5, 1050), "idle");
});

test("presence polls continue from the last update ID", () => {
  const presence = new Presence({ 5: { active_timestamp: 900, idle_timestamp: 1000 } }, 1050, 7);
  eq(presence.lastUpdateId, 7);
  presence.absorb({ presences: { 6: { active_timestamp: 1040, idle_timestamp: 1040 } }, presence_last_update_id: 9 });
  eq([presence.lastUpdateId, presence.status(5, 1050), presence.status(6, 1050)], [9, "idle", "active"]);
  presence.absorb({ presences: {} });
  eq(presence.lastUpdateId, 9);
  eq(new Presence({}, 1050, undefined).lastUpdateId, -1);
});

test("drafts events", () => {
  const state = freshState();
  applyEvent(state, { type: "drafts", op: "add", drafts: [{ id: 1, type: "stream", to: [1], topic: "t", content: "x", timestamp: 1 }] });
  applyEvent(state, { type: "drafts", op: "update", draft: { id: 1, type: "stream", to: [1], topic: "t", content: "y", timestamp: 2 } });
  eq(state.drafts.get(1).content, "y");
  applyEvent(state, { type: "drafts", op: "remove", draft_id: 1 });
  eq(state.drafts.size, 0);
});

// ---- permissions, backoff, API encoding, autocomplete --------------------------------------

test("group-setting membership through ids, subgroups and anonymous groups", () => {
  const groups = new Map([[1, { id: 1, members: [5], direct_subgroup_ids: [2] }], [2, { id: 2, members: [6], direct_subgroup_ids: [1] }]]);
  eq(userInGroupSetting(1, 6, groups), true);
  eq(userInGroupSetting(2, 5, groups), true);
  eq(userInGroupSetting(2, 7, groups), false);
  eq(userInGroupSetting({ direct_members: [7], direct_subgroups: [] }, 7, groups), true);
});

test("edit and delete permissions follow the realm's limits", () => {
  const state = freshState();
  state.realm.realm_allow_message_editing = true;
  state.realm.realm_message_content_edit_limit_seconds = 600;
  const mine = { sender_id: ME, timestamp: 1000, type: "stream" };
  eq(state.permissions.canEdit(mine, 1500), true);
  eq(state.permissions.canEdit(mine, 2000), false);
  eq(state.permissions.canEdit({ ...mine, sender_id: 11 }, 1500), false);
});

test("backoff grows exponentially with jitter and a ceiling", () => {
  eq(backoffDelay(0, () => 0.5), 500);
  eq(backoffDelay(3, () => 0.5), 4000);
  eq(backoffDelay(30, () => 0.5), BACKOFF_MAX_MS);
  eq(backoffDelay(0, () => 0), 375);
});

test("encodeParams JSON-encodes non-strings", () => {
  eq(encodeParams({ a: "x", b: 3, c: [1, 2], d: true, e: undefined }).toString(), "a=x&b=3&c=%5B1%2C2%5D&d=true");
});

test("currentToken finds @, # and : triggers before the caret", () => {
  eq(currentToken("hi @ia", 6), { trigger: "@", query: "ia", start: 3 });
  eq(currentToken("#gen", 4), { trigger: "#", query: "gen", start: 0 });
  eq(currentToken("so :ta", 6), { trigger: ":", query: "ta", start: 3 });
  eq(currentToken("so :t", 5), null);
  eq(currentToken("mail a@b", 8), null);
});

test("a message list's version changes with everything but ids added after its newest", () => {
  const list = new MessageList([]);
  for (const id of [5, 7, 9]) list.insert(id);
  eq(list.version, 0);
  list.insert(8);
  eq([list.ids, list.version], [[5, 7, 8, 9], 1]);
  list.insert(8);
  list.remove(new Set([42]));
  eq(list.version, 1, "a duplicate or a removal of nothing changes nothing");
  list.remove(new Set([7]));
  eq([list.ids, list.version], [[5, 8, 9], 2]);
  list.foundOldest = true;
  eq(list.trimOldest(2), true);
  eq([list.ids, list.foundOldest, list.version], [[8, 9], false, 3]);
  eq(list.trimOldest(2), false);
});

test("live messages keep lists not shown, and the messages held, bounded", () => {
  const messages = new Messages(ME);
  const channel = [{ operator: "channel", operand: 1 }];
  const shown = messages.list([]);
  const other = messages.list(channel);
  shown.foundNewest = other.foundNewest = true;
  messages.shown = shown;
  const count = LIVE_LIST_MAX + 500;
  for (let id = 1; id <= count; id += 1) {
    messages.insertLive({ id, type: "stream", stream_id: 1, subject: "t", sender_id: 11, display_recipient: "general" }, ["read"]);
    eq(Boolean(messages.get(id)), true, "the message just stored is there");
  }
  eq(shown.ids.length, count, "the shown list is the view's to trim");
  eq(other.ids.length <= LIVE_LIST_MAX && other.ids.length >= LIVE_LIST_KEEP, true);
  eq(other.ids[other.ids.length - 1], count);
  messages.shown = other;
  messages.dropList([]);
  messages.prune();
  eq(messages.byId.size, other.ids.length);
});

// ---- desktop notifications -----------------------------------------------------------------

test("a desktop notification's title isolates the sender, the channel and the topic", () => {
  const dm = { type: "private", sender_full_name: "Iago" };
  eq(notificationTitle(dm, ""), "\u2068Iago\u2069 (direct message)");
  const inChannel = { type: "stream", sender_full_name: "أحمد", stream_id: 2, subject: "plans" };
  eq(notificationTitle(inChannel, "design team"), "\u2068أحمد\u2069 (\u2068#design team\u2069 > \u2068plans\u2069)");
});

// ---- the user list, loaded after the first screen ------------------------------------------

function stateWithoutUsers() {
  return createState({
    queue_id: "q", user_id: ME, max_message_id: 4,
    subscriptions: [{ stream_id: 1, name: "general", color: "#c2c2c2" }],
    unread_msgs: { streams: [], pms: [], huddles: [], mentions: [] },
    presences: {}, server_timestamp: Date.now() / 1000,
    realm_user_groups: [], recent_private_conversations: [],
  }, { user_id: ME }, { user_id: ME, full_name: "Me", email: "me@x.com", role: 200 });
}

test("the first register fetches everything but the user list and the duplicate channel list, and hears every event", () => {
  eq(FIRST_FETCH_TYPES.includes("realm_user"), false);
  eq(FETCH_TYPES.filter((type) => !FIRST_FETCH_TYPES.includes(type)), ["stream", "realm_user"]);
});

test("before the user list: oneself from /users/me, others by the names their messages carry", () => {
  const state = stateWithoutUsers();
  eq(state.users.complete, false);
  eq(state.users.get(ME).role, 200);
  eq(state.permissions.isModerator, true);
  applyEvent(state, messageEvent(5));
  applyEvent(state, messageEvent(6, { type: "private", sender_id: 12, sender_full_name: "Othello", sender_email: "o@x.com", display_recipient: [{ id: ME, full_name: "Me", email: "me@x.com" }, { id: 12, full_name: "Othello", email: "o@x.com" }, { id: 13, full_name: "Emilia", email: "e@x.com" }] }));
  eq([state.users.name(11), state.users.name(13), state.users.email(12), state.users.name(99)], ["Iago", "Emilia", "o@x.com", "Unknown user 99"]);
  // Someone no message named: what drew the name is drawn again once the list is there.
  eq(state.users.missed, true);
  eq(state.users.find("e@x.com").user_id, 13);
  // Known only so: not in the list of people (which waits for the whole list).
  eq(state.users.active().map((u) => u.user_id), [ME]);
});

test("realm_user events heard before the list are applied again on top of it", () => {
  const state = stateWithoutUsers();
  applyEvent(state, messageEvent(5));
  // Iago renamed, Othello added then renamed, Emilia deactivated, oneself demoted: all
  // before GET /users answers, whose list may predate some of them.
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: 11, full_name: "Iago the Great" } });
  eq(state.users.name(11), "Iago the Great");
  applyEvent(state, { type: "realm_user", op: "add", person: { user_id: 12, full_name: "Othello", email: "o@x.com", role: 400 } });
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: 12, full_name: "Othello the Moor" } });
  applyEvent(state, { type: "realm_user", op: "remove", person: { user_id: 13, full_name: "Emilia" } });
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: ME, role: 400 } });
  loadUsers(state, [
    { user_id: ME, full_name: "Me", email: "me@x.com", role: 200, is_active: true },
    { user_id: 11, full_name: "Iago", email: "iago@x.com", role: 400, is_active: true },
    { user_id: 13, full_name: "Emilia", email: "e@x.com", role: 400, is_active: true },
    { user_id: 14, full_name: "Bianca", email: "b@x.com", role: 400, is_active: false },
  ]);
  eq(state.users.complete, true);
  eq(state.users.active().map((u) => [u.user_id, u.full_name]), [[11, "Iago the Great"], [ME, "Me"], [12, "Othello the Moor"]]);
  eq(state.users.get(14).is_active, false);
  eq(state.users.get(ME).role, 400);
  eq(state.permissions.isModerator, false);
  // From now on events apply once, and nothing is kept for a replay.
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: 11, full_name: "Iago" } });
  eq([state.users.name(11), state.users.heard.length, state.users.seen.size], ["Iago", 0, 0]);
});

test("a list coming in slices leaves the store as it was until it is loaded, and keeps the events heard meanwhile", () => {
  const state = stateWithoutUsers();
  applyEvent(state, messageEvent(5));
  const list = new UserListLoad();
  list.add([
    { user_id: ME, full_name: "Me", email: "me@x.com", role: 200, is_active: true },
    { user_id: 11, full_name: "Iago", email: "iago@x.com", role: 400, is_active: true },
  ]);
  // Between two slices: Iago renamed, Othello added (after the list was read).
  applyEvent(state, { type: "realm_user", op: "update", person: { user_id: 11, full_name: "Iago the Great" } });
  applyEvent(state, { type: "realm_user", op: "add", person: { user_id: 12, full_name: "Othello", email: "o@x.com", role: 400 } });
  eq([state.users.complete, state.users.name(11), state.users.active().map((u) => u.user_id)], [false, "Iago the Great", [ME, 12]]);
  list.add([{ user_id: 13, full_name: "Emilia", email: "e@x.com", role: 400, is_active: true }]);
  eq(state.users.get(13), undefined);
  loadUsers(state, list);
  eq(state.users.active().map((u) => [u.user_id, u.full_name]), [[13, "Emilia"], [11, "Iago the Great"], [ME, "Me"], [12, "Othello"]]);
  eq([state.users.complete, state.users.heard.length, state.permissions.isModerator], [true, 0, true]);
});

test("getInSlices hands a list over in slices, each in a task of its own, and the rest of the answer", async () => {
  // test_unit.py answers /json/unit/list with 2,500 numbered items.
  const order = [];
  const items = [];
  const head = await getInSlices("/unit/list", { n: 2500 }, "items", (slice) => {
    order.push(`slice ${slice.length}`);
    items.push(...slice);
    // Runs before the next slice only if that slice is a task of its own.
    queueMicrotask(() => order.push("microtask"));
  }, { size: 1000 });
  eq(order, ["slice 1000", "microtask", "slice 1000", "microtask", "slice 500", "microtask"]);
  eq([items.length, items[0], items[2499]], [2500, { n: 0 }, { n: 2499 }]);
  eq(head, { result: "success", msg: "", total: 2500 });
});

test("getInSlices fails as a GET does, and with what the slice's handler threw", async () => {
  const failed = await getInSlices("/unit/missing", {}, "items", () => {}).catch((error) => error);
  eq([failed instanceof ApiError, failed.status, failed.code, failed.message], [true, 404, "BAD_REQUEST", "No such list"]);
  const thrown = await getInSlices("/unit/list", { n: 10 }, "items", () => { throw new Error("stop"); }).catch((error) => error);
  eq(thrown.message, "stop");
  const empty = [];
  await getInSlices("/unit/list", { n: 0 }, "items", (slice) => empty.push(slice));
  eq(empty, [[]]);
});

// ---- runner --------------------------------------------------------------------------------

const results = [];
for (const { name, fn } of tests) {
  try {
    await fn();
    results.push({ name, ok: true });
  } catch (error) {
    results.push({ name, ok: false, error: String(error && error.stack || error) });
  }
}
document.getElementById("results").textContent = results.map((r) => `${r.ok ? "ok  " : "FAIL"} ${r.name}${r.error ? "\n     " + r.error : ""}`).join("\n");
window.unitResults = results;
