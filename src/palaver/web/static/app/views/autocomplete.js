// Typeahead for the compose box: "@name" → @**Full Name**, "#chan" → #**channel**,
// ":emo" → :emoji_name:. The list is an ARIA listbox tied to the textarea.

import { h, clear, unicodeEmoji, channelRef } from "./dom.js";
import { loadEmojiNames } from "./emoji_picker.js";
import { t } from "../i18n.js";

// The token being typed just before the caret, if it starts with a trigger character.
export function currentToken(text, caret) {
  const before = text.slice(0, caret);
  const match = /(^|[\s(])([@#:])([^\s@#:]*)$/.exec(before);
  if (!match) return null;
  const [, , trigger, query] = match;
  if (trigger === ":" && query.length < 2) return null;
  return { trigger, query, start: caret - query.length - 1 };
}

export class Autocomplete {
  constructor(app, textarea) {
    this.app = app;
    this.textarea = textarea;
    this.items = [];
    this.index = 0;
    this.token = null;
    this.box = h("ul", { id: "compose-typeahead", class: "typeahead", role: "listbox", "aria-label": t("Suggestions"), hidden: true });
    textarea.setAttribute("aria-controls", "compose-typeahead");
    textarea.setAttribute("aria-autocomplete", "list");
    textarea.addEventListener("input", () => this.update());
    textarea.addEventListener("blur", () => setTimeout(() => this.close(), 150));
  }

  isOpen() {
    return !this.box.hidden;
  }

  async update() {
    const token = currentToken(this.textarea.value, this.textarea.selectionStart);
    if (!token) return this.close();
    this.token = token;
    const { state } = this.app;
    if (token.trigger === "@") {
      if (!state.users.complete) {
        // Suggested from the whole list, once it is there.
        this.app.usersReady().then(() => this.update());
        return this.close();
      }
      this.items = state.users.search(token.query).map((u) => ({ label: u.full_name, hint: u.email, insert: `@**${u.full_name}** ` }));
    } else if (token.trigger === "#") {
      this.items = state.subs.search(token.query).map((s) => ({ label: channelRef(s.name), hint: "", insert: `#**${s.name}** ` }));
    } else {
      const names = await loadEmojiNames();
      const q = token.query.toLowerCase();
      const custom = Object.values(state.emoji).filter((e) => !e.deactivated && e.name.startsWith(q))
        .map((e) => ({ label: `:${e.name}:`, hint: "", insert: `:${e.name}: ` }));
      const unicode = [];
      for (const [name, code] of names) {
        if (name.startsWith(q)) unicode.push({ label: `${unicodeEmoji(code)} :${name}:`, hint: "", insert: `:${name}: ` });
        if (unicode.length >= 8) break;
      }
      this.items = [...custom, ...unicode].slice(0, 8);
      // The caret may have moved on while the table loaded.
      const again = currentToken(this.textarea.value, this.textarea.selectionStart);
      if (!again || again.start !== token.start) return this.close();
    }
    this.index = 0;
    this.draw();
  }

  draw() {
    if (!this.items.length) return this.close();
    clear(this.box);
    this.items.forEach((item, i) => {
      const option = h("li", { id: `typeahead-${i}`, role: "option", "aria-selected": String(i === this.index), class: i === this.index ? "active" : "" },
        h("span", {}, item.label), item.hint ? h("span", { class: "hint", text: item.hint }) : null);
      option.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.index = i;
        this.accept();
      });
      this.box.append(option);
    });
    this.box.hidden = false;
    this.textarea.setAttribute("aria-activedescendant", `typeahead-${this.index}`);
    this.textarea.setAttribute("aria-expanded", "true");
  }

  close() {
    this.box.hidden = true;
    this.items = [];
    this.textarea.removeAttribute("aria-activedescendant");
    this.textarea.setAttribute("aria-expanded", "false");
  }

  // Handles arrow keys, Enter/Tab and Escape while open; returns true when it used the key.
  onKeydown(event) {
    if (!this.isOpen()) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.index = (this.index + step + this.items.length) % this.items.length;
      this.draw();
      return true;
    }
    if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
      this.accept();
      return true;
    }
    if (event.key === "Escape") {
      this.close();
      return true;
    }
    return false;
  }

  accept() {
    const item = this.items[this.index];
    if (!item || !this.token) return this.close();
    const ta = this.textarea;
    const caret = ta.selectionStart;
    ta.value = ta.value.slice(0, this.token.start) + item.insert + ta.value.slice(caret);
    const position = this.token.start + item.insert.length;
    ta.setSelectionRange(position, position);
    this.close();
    ta.dispatchEvent(new Event("input"));
    ta.focus();
  }
}
