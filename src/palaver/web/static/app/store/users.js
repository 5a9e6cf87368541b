// Users of the organization (from realm_users or GET /users, and realm_user events).
//
// The web app's first /register leaves the list out (main.js): until ``load`` brings it,
// the store holds the signed-in user only (GET /users/me), names and addresses seen in
// messages, and every realm_user event heard, which ``load`` applies again on top of the
// list. Replayed in order, each event sets the fields it names to values no older than the
// list's, and a field no event names is the list's: whichever side of the event the list
// was read on, the result is the server's present.
import { N_, t } from "../i18n.js";

// One collator for every sort by name: localeCompare builds one per call, which sorting
// ten thousand names pays some 130,000 times.
export const byName = new Intl.Collator().compare;

// English names, marked for the catalog (N_); shown through t() where they are drawn.
export const ROLE_NAMES = { 100: N_("Owner"), 200: N_("Administrator"), 300: N_("Moderator"), 400: N_("Member"), 600: N_("Guest") };

export class Users {
  // ``realmUsers`` null: the list is still to come (``load``).
  constructor(realmUsers = [], myId = 0) {
    this.myId = myId;
    this.byId = new Map();
    this.complete = realmUsers !== null;
    // [op, person] of the realm_user events heard before the list came.
    this.heard = [];
    // user id -> {full_name, email} as messages name them, until the list comes.
    this.seen = new Map();
    for (const user of realmUsers || []) this.byId.set(user.user_id, { ...user });
  }

  // The whole list (GET /users ``members``: active and deactivated) replaces what was
  // known, and the events heard meanwhile are applied again. ``members``: the list, or a
  // UserListLoad that was given it slice by slice.
  load(members) {
    this.byId = members instanceof UserListLoad ? members.byId : new UserListLoad().add(members).byId;
    this.complete = true;
    const heard = this.heard;
    this.heard = [];
    this.seen.clear();
    this.activeCache = null;
    for (const [op, person] of heard) this[op](person);
  }

  // A user known before the list (the signed-in one, from GET /users/me).
  note(user) {
    if (!this.byId.has(user.user_id)) this.byId.set(user.user_id, { is_active: true, ...user });
  }

  // Until the list comes, a message's sender and DM recipients are known by the name and
  // address it carries.
  learn(message) {
    if (this.complete) return;
    if (message.sender_id !== undefined && message.sender_full_name !== undefined) {
      this.seen.set(message.sender_id, { full_name: message.sender_full_name, email: message.sender_email });
    }
    if (message.type === "private" && Array.isArray(message.display_recipient)) {
      for (const r of message.display_recipient) if (r.full_name !== undefined) this.seen.set(r.id, { full_name: r.full_name, email: r.email });
    }
  }

  get(id) {
    return this.byId.get(id);
  }

  name(id) {
    const user = this.byId.get(id) || this.seen.get(id);
    if (user) return user.full_name;
    // Asked before the list came of someone no message named (a reaction, a poll vote).
    if (!this.complete) this.missed = true;
    return t("Unknown user {id}", { id });
  }

  email(id) {
    const user = this.byId.get(id) || this.seen.get(id);
    return user && user.email ? user.email : String(id);
  }

  // Looks a user up by email (as typed in search) or, failing that, by exact full name.
  find(text) {
    const wanted = text.trim().toLowerCase();
    for (const user of this.byId.values()) {
      if (user.email.toLowerCase() === wanted || (user.delivery_email || "").toLowerCase() === wanted) return user;
    }
    for (const user of this.byId.values()) {
      if (user.full_name.toLowerCase() === wanted) return user;
    }
    for (const [id, seen] of this.seen) {
      if ((seen.email || "").toLowerCase() === wanted || seen.full_name.toLowerCase() === wanted) return { user_id: id, ...seen };
    }
    return undefined;
  }

  // Active humans and bots, sorted by name (cached: organizations can have many thousands).
  active() {
    if (!this.activeCache) {
      this.activeCache = [...this.byId.values()]
        .filter((u) => u.is_active !== false)
        .sort((a, b) => byName(a.full_name, b.full_name));
    }
    return this.activeCache;
  }

  // Autocomplete: active users whose name or email starts a word with the query.
  search(query, limit = 8) {
    const q = query.toLowerCase();
    const found = [];
    for (const u of this.active()) {
      const name = u.full_name.toLowerCase();
      if (name.startsWith(q) || name.split(/\s+/).some((w) => w.startsWith(q)) || u.email.toLowerCase().startsWith(q)) {
        found.push(u);
        if (found.length >= limit) break;
      }
    }
    return found;
  }

  isAdmin(id = this.myId) {
    const user = this.byId.get(id);
    return Boolean(user && (user.role === 100 || user.role === 200));
  }

  add(person) {
    if (!this.complete) this.heard.push(["add", person]);
    this.activeCache = null;
    this.byId.set(person.user_id, { is_active: true, ...person });
  }

  // realm_user update: the person object carries user_id plus the changed fields.
  update(person) {
    if (!this.complete) this.heard.push(["update", person]);
    const user = this.byId.get(person.user_id);
    if (!user) {
      const seen = this.seen.get(person.user_id);
      if (seen && person.full_name !== undefined) seen.full_name = person.full_name;
      return;
    }
    this.activeCache = null;
    for (const [key, value] of Object.entries(person)) {
      if (key === "new_email") user.email = value;
      else if (key !== "user_id") user[key] = value;
    }
    if ("role" in person) {
      user.is_admin = person.role === 100 || person.role === 200;
      user.is_owner = person.role === 100;
    }
  }

  remove(person) {
    if (!this.complete) this.heard.push(["remove", person]);
    const user = this.byId.get(person.user_id);
    if (user) user.is_active = false;
    this.activeCache = null;
  }
}

// The user list as it comes in slices (api.getInSlices), each ``add``ed in a task of its
// own; the store is unchanged until Users.load takes it whole, so what the page shows (and
// the events heard meanwhile, kept for the replay) is as before the list until then.
export class UserListLoad {
  constructor() {
    this.byId = new Map();
  }

  add(members) {
    for (const user of members) this.byId.set(user.user_id, { ...user });
    return this;
  }
}
