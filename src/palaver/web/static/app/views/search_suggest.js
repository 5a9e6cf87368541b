// Suggestions under the search box as one types: operators, then people, channels and the
// current channel's topics for the word being typed. Arrow keys move, Enter or a click takes
// one (the search then runs when it is complete), Escape closes. Loaded on first focus.

import { N_, t } from "../i18n.js";
import { h, clear, channelRef } from "./dom.js";

const OPERATORS = [
  ["channel:", N_("Messages in a channel")], ["topic:", N_("Messages in a topic")], ["sender:", N_("Messages sent by someone")],
  ["dm:", N_("Direct messages with someone")], ["is:starred", N_("Starred messages")], ["is:mentioned", N_("Messages that mention you")],
  ["is:unread", N_("Unread messages")], ["is:followed", N_("Followed topics")], ["is:resolved", N_("Resolved topics")], ["is:dm", N_("Direct messages")],
  ["has:link", N_("Messages with links")], ["has:image", N_("Messages with images")], ["has:attachment", N_("Messages with files")],
];
const LIMIT = 8;

function quote(value) {
  return /\s/.test(value) ? `"${value}"` : value;
}

// The last word of the box (an operator and a partial operand, or free text) and the rest.
export function lastWord(text) {
  const match = /(^|\s)(-?)([a-z-]+:)?("[^"]*|\S*)$/.exec(text);
  if (!match) return { head: text, negated: "", operator: "", operand: "" };
  const start = match.index + match[1].length;
  return { head: text.slice(0, start), negated: match[2], operator: match[3] || "", operand: match[4].replace(/^"/, "") };
}

// [{text (the whole box after choosing), label (text or a node), hint}]
export function suggestions(app, text) {
  const { state } = app;
  const { head, negated, operator, operand } = lastWord(text);
  const q = operand.toLowerCase();
  const found = [];
  const add = (word, label, hint) => found.length < LIMIT && found.push({ text: `${head}${negated}${word} `, label, hint });
  if (operator === "channel:" || operator === "stream:") {
    for (const s of state.subs.search(q, LIMIT)) add(`channel:${quote(s.name)}`, channelRef(s.name), t("Channel"));
  } else if (operator === "sender:" || operator === "dm:" || operator === "from:") {
    for (const u of state.users.search(q, LIMIT)) add(`${operator}${u.email}`, u.full_name, u.email);
  } else if (operator === "topic:") {
    const channel = /(?:^|\s)channel:("[^"]+"|\S+)/.exec(head);
    const streamId = channel ? state.subs.idByName(channel[1].replace(/"/g, "")) : undefined;
    const topics = streamId ? state.subs.topicsOf(streamId) : [];
    for (const topic of topics.filter((x) => x.name.toLowerCase().includes(q))) add(`topic:${quote(topic.name)}`, topic.name, t("Topic"));
  } else if (operator) {
    for (const [word, hint] of OPERATORS) if (word.startsWith(operator + q)) add(word, word, t(hint));
  } else {
    if (q) {
      for (const [word, hint] of OPERATORS) if (word.startsWith(q)) add(word, word, t(hint));
      for (const s of state.subs.search(q, 3)) add(`channel:${quote(s.name)}`, channelRef(s.name), t("Channel"));
      for (const u of state.users.search(q, 3)) add(`sender:${u.email}`, t("Sent by {name}", { name: u.full_name }), u.email);
    } else {
      for (const [word, hint] of OPERATORS.slice(0, LIMIT)) add(word, word, t(hint));
    }
  }
  return found;
}

export function attachSuggestions(app, input, onSearch) {
  const box = h("ul", { id: "search-suggestions", class: "typeahead search-suggestions", role: "listbox", "aria-label": t("Search suggestions"), hidden: true });
  input.setAttribute("aria-controls", box.id);
  input.setAttribute("aria-autocomplete", "list");
  input.parentElement.append(box);
  let items = [];
  let index = -1;
  const close = () => {
    box.hidden = true;
    index = -1;
    input.removeAttribute("aria-activedescendant");
  };
  const choose = (item) => {
    input.value = item.text;
    input.focus();
    // A complete term (an operator with its operand) searches at once; "channel:" waits.
    if (!item.text.trimEnd().endsWith(":")) {
      close();
      onSearch(input.value);
    } else {
      input.value = item.text.trimEnd();
      draw();
    }
  };
  const draw = () => {
    if (!app.state) return;
    items = suggestions(app, input.value);
    index = -1;
    clear(box);
    items.forEach((item, i) => box.append(h("li", { id: `search-suggestion-${i}`, role: "option", "aria-selected": "false",
      onmousedown: (event) => {
        event.preventDefault();
        choose(item);
      } }, h("span", {}, item.label), item.hint ? h("span", { class: "hint", text: item.hint }) : null)));
    box.hidden = !items.length;
  };
  const move = (step) => {
    if (box.hidden || !items.length) return;
    index = (index + step + items.length) % items.length;
    [...box.children].forEach((li, i) => {
      li.classList.toggle("active", i === index);
      li.setAttribute("aria-selected", String(i === index));
    });
    input.setAttribute("aria-activedescendant", `search-suggestion-${index}`);
  };
  input.addEventListener("input", draw);
  input.addEventListener("focus", draw);
  // Closed a moment after the box loses focus (a click on a row lands first), unless it has
  // focus again by then.
  input.addEventListener("blur", () => setTimeout(() => document.activeElement !== input && close(), 100));
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      move(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.key === "Enter" && !box.hidden && index >= 0) {
      event.preventDefault();
      choose(items[index]);
    } else if (event.key === "Escape" && !box.hidden) {
      event.stopPropagation();
      close();
    } else if (event.key === "Enter") {
      close();
    }
  });
  draw();
}
