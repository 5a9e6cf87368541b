// Messages by id, and per narrow the sorted list of ids fetched so far.

import { messageMatches, narrowKey } from "../narrow.js";

// A list fed by live messages keeps this many of its newest once it grows past
// LIVE_LIST_MAX (a page left open all day): the older ones are fetched again if scrolled to.
export const LIVE_LIST_MAX = 600;
export const LIVE_LIST_KEEP = 400;

export class MessageList {
  constructor(terms) {
    this.terms = terms;
    this.ids = [];
    this.foundOldest = false;
    this.foundNewest = false;
    this.loading = false;
    // Bumped by every change other than ids added after the newest: a view that drew
    // version v and sees v again need only draw the ids after the ones it drew.
    this.version = 0;
  }

  insert(id) {
    const ids = this.ids;
    if (!ids.length || ids[ids.length - 1] < id) {
      ids.push(id);
      return;
    }
    let lo = 0;
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ids[mid] < id) lo = mid + 1;
      else hi = mid;
    }
    if (ids[lo] !== id) {
      ids.splice(lo, 0, id);
      this.version += 1;
    }
  }

  remove(idSet) {
    const kept = this.ids.filter((id) => !idSet.has(id));
    if (kept.length !== this.ids.length) this.version += 1;
    this.ids = kept;
  }

  // Forgets all but the newest ``keep`` ids; the history before them is unfetched again.
  trimOldest(keep) {
    if (this.ids.length <= keep) return false;
    this.ids = this.ids.slice(this.ids.length - keep);
    this.foundOldest = false;
    this.version += 1;
    return true;
  }

  // Whether a message id falls inside the stretch of history this list has loaded.
  covers(id) {
    if (!this.ids.length) return this.foundOldest && this.foundNewest;
    return (this.foundOldest || id >= this.ids[0]) && (this.foundNewest || id <= this.ids[this.ids.length - 1]);
  }
}

// What the feed draws of a message, to tell whether a fetched copy changes it.
function shownPart(m) {
  return JSON.stringify([m.content, m.subject, m.stream_id, m.reactions, m.flags]);
}

export class Messages {
  constructor(myId = 0) {
    this.myId = myId;
    this.byId = new Map();
    this.lists = new Map();
    // What this client sent and the server has not yet sent back, by local_id: shown greyed
    // after the feeds it belongs in, never in a list (no id to fetch, select or mark by).
    this.echoes = new Map();
    // The list a view shows: only that view may trim it (it knows where its reader is).
    this.shown = null;
    this.liveSincePrune = 0;
    // Counts the changes events made to stored messages; each changed message keeps the
    // count of its latest in ``eventStamp``. A copy fetched before an event never undoes it.
    this.stamp = 0;
  }

  touch(message) {
    this.stamp += 1;
    message.eventStamp = this.stamp;
  }

  addEcho(localId, message) {
    this.echoes.set(localId, { ...message, local_id: localId, locally_echoed: true });
  }

  dropEcho(localId) {
    return this.echoes.delete(localId);
  }

  // The echoes a list shows: those of its narrow, once it reaches the newest messages.
  echoesFor(list) {
    if (!list.foundNewest) return [];
    return [...this.echoes.values()].filter((m) => messageMatches(list.terms, m, this.myId) === true);
  }

  get(id) {
    return this.byId.get(id);
  }

  list(terms) {
    const key = narrowKey(terms);
    let list = this.lists.get(key);
    if (!list) {
      list = new MessageList(terms);
      this.lists.set(key, list);
    }
    return list;
  }

  dropList(terms) {
    this.lists.delete(narrowKey(terms));
  }

  // Messages from GET /messages (flags inside each message), asked for when ``stamp`` was
  // ``asOf``: a message an event changed since keeps what the event made it. Returns the
  // ids that are new or now read differently.
  store(messages, asOf = Infinity) {
    const changed = [];
    for (const message of messages) {
      const known = this.byId.get(message.id);
      if (known && (known.eventStamp || 0) > asOf) {
        // Search results carry highlights for this narrow only: keep them on the side.
        if (message.match_content !== undefined) known.match_content = message.match_content;
        if (message.match_subject !== undefined) known.match_subject = message.match_subject;
        continue;
      }
      if (!known || shownPart(known) !== shownPart(message)) changed.push(message.id);
      this.byId.set(message.id, known ? { ...known, ...message } : { ...message });
    }
    return changed;
  }

  // A live message: stored, and added to each loaded list it belongs to. Lists not shown
  // keep their newest LIVE_LIST_KEEP once past LIVE_LIST_MAX, and messages no list holds are
  // let go now and then, so a page open for hours holds a bounded number of messages.
  insertLive(message, flags) {
    // Before storing: the message just stored stays, whichever lists hold it.
    this.liveSincePrune += 1;
    if (this.liveSincePrune >= LIVE_LIST_MAX - LIVE_LIST_KEEP) this.prune();
    const stored = { ...message, flags: [...flags] };
    this.byId.set(message.id, stored);
    for (const list of this.lists.values()) {
      if (list.foundNewest && messageMatches(list.terms, stored, this.myId) === true) {
        list.insert(message.id);
        if (list !== this.shown && list.ids.length > LIVE_LIST_MAX) list.trimOldest(LIVE_LIST_KEEP);
      }
    }
    return stored;
  }

  // Drops the messages that no list holds.
  prune() {
    this.liveSincePrune = 0;
    const held = new Set();
    for (const list of this.lists.values()) for (const id of list.ids) held.add(id);
    for (const id of this.byId.keys()) if (!held.has(id)) this.byId.delete(id);
  }

  remove(ids) {
    const idSet = new Set(ids);
    for (const id of ids) this.byId.delete(id);
    for (const list of this.lists.values()) list.remove(idSet);
  }

  setFlag(ids, flag, on) {
    for (const id of ids) {
      const message = this.byId.get(id);
      if (!message) continue;
      const flags = new Set(message.flags || []);
      if (on) flags.add(flag);
      else flags.delete(flag);
      message.flags = [...flags];
      this.touch(message);
    }
  }

  setFlagAll(flag, on) {
    this.setFlag([...this.byId.keys()], flag, on);
  }

  reaction(event) {
    const message = this.byId.get(event.message_id);
    if (!message) return false;
    const reactions = message.reactions || [];
    const same = (r) => r.emoji_code === event.emoji_code && r.reaction_type === event.reaction_type && r.user_id === event.user_id;
    if (event.op === "add") {
      if (!reactions.some(same)) reactions.push({ emoji_name: event.emoji_name, emoji_code: event.emoji_code, reaction_type: event.reaction_type, user_id: event.user_id });
    } else {
      message.reactions = reactions.filter((r) => !same(r));
      this.touch(message);
      return true;
    }
    message.reactions = reactions;
    this.touch(message);
    return true;
  }

  // update_message: a content edit of message_id, and/or a move of message_ids.
  // Returns the ids whose place (channel/topic) changed.
  update(event, channelName) {
    const edited = this.byId.get(event.message_id);
    if (edited && event.rendered_content !== undefined) {
      edited.content = event.rendered_content;
      delete edited.pending_edit;
      delete edited.match_content;
      if (!event.rendering_only) edited.last_edit_timestamp = event.edit_timestamp;
      if (event.is_me_message !== undefined) edited.is_me_message = event.is_me_message;
      this.touch(edited);
    }
    const moved = event.subject !== undefined || (event.new_stream_id !== undefined && event.new_stream_id !== event.stream_id);
    if (!moved) return [];
    const ids = event.message_ids || [event.message_id];
    for (const id of ids) {
      const message = this.byId.get(id);
      if (!message) continue;
      if (event.subject !== undefined) {
        message.subject = event.subject;
        delete message.match_subject;
      }
      if (event.new_stream_id !== undefined) {
        message.stream_id = event.new_stream_id;
        message.display_recipient = channelName(event.new_stream_id);
      }
      message.last_moved_timestamp = event.edit_timestamp;
      this.touch(message);
    }
    this.refilter(ids);
    return ids;
  }

  // After a move: lists drop messages that left them and take the ones that arrived.
  refilter(ids) {
    for (const list of this.lists.values()) {
      for (const id of ids) {
        const message = this.byId.get(id);
        if (!message) continue;
        const matches = messageMatches(list.terms, message, this.myId);
        if (matches === false) list.remove(new Set([id]));
        else if (matches === true && list.covers(id)) list.insert(id);
      }
    }
  }
}
