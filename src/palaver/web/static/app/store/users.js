// Users of the organization (from realm_users and realm_user events).
import { N_ } from "../i18n.js";

// English names, marked for the catalog (N_); shown through t() where they are drawn.
export const ROLE_NAMES = { 100: N_("Owner"), 200: N_("Administrator"), 300: N_("Moderator"), 400: N_("Member"), 600: N_("Guest") };

export class Users {
  constructor(realmUsers = [], myId = 0) {
    this.myId = myId;
    this.byId = new Map();
    for (const user of realmUsers) this.byId.set(user.user_id, { ...user });
  }

  get(id) {
    return this.byId.get(id);
  }

  name(id) {
    const user = this.byId.get(id);
    return user ? user.full_name : `Unknown user ${id}`;
  }

  email(id) {
    const user = this.byId.get(id);
    return user ? user.email : String(id);
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
    return undefined;
  }

  // Active humans and bots, sorted by name (cached: organizations can have many thousands).
  active() {
    if (!this.activeCache) {
      this.activeCache = [...this.byId.values()]
        .filter((u) => u.is_active !== false)
        .sort((a, b) => a.full_name.localeCompare(b.full_name));
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
    this.activeCache = null;
    this.byId.set(person.user_id, { is_active: true, ...person });
  }

  // realm_user update: the person object carries user_id plus the changed fields.
  update(person) {
    const user = this.byId.get(person.user_id);
    if (!user) return;
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
    const user = this.byId.get(person.user_id);
    if (user) user.is_active = false;
    this.activeCache = null;
  }
}
