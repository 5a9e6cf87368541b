// The emoji picker for reactions. The name → code table (emoji/names.json, generated from the
// server's own table) is fetched the first time it is needed, so it costs nothing at load.

import { h, clear, emojiImage } from "./dom.js";
import { t } from "../i18n.js";

let namesPromise = null;

export function loadEmojiNames() {
  if (!namesPromise) {
    namesPromise = fetch(new URL("../emoji/names.json", import.meta.url))
      .then((response) => response.json())
      .then((table) => Object.entries(table))
      .catch(() => {
        namesPromise = null;
        return [];
      });
  }
  return namesPromise;
}

const POPULAR = ["+1", "tada", "heart", "joy", "smile", "slight_smile", "thinking", "eyes", "rocket", "fire", "check", "working_on_it", "-1", "cry", "clap", "pray"];

// Opens a picker next to `anchor`; onPick({emoji_name, emoji_code, reaction_type}).
export function openEmojiPicker(app, anchor, onPick) {
  closeEmojiPicker();
  const search = h("input", { type: "search", class: "picker-search", placeholder: t("Search emoji"), "aria-label": t("Search emoji") });
  const grid = h("div", { class: "picker-grid", role: "group", "aria-label": t("Emoji") });
  const dialog = h("div", { id: "emoji-picker", class: "popover picker", role: "dialog", "aria-label": t("Choose an emoji") }, search, grid);
  const pick = (choice) => {
    closeEmojiPicker();
    onPick(choice);
    anchor.focus();
  };
  const draw = async () => {
    const names = await loadEmojiNames();
    const q = search.value.trim().toLowerCase().replace(/^:|:$/g, "");
    let chosen;
    if (!q) {
      const table = new Map(names);
      chosen = POPULAR.filter((n) => table.has(n)).map((n) => [n, table.get(n)]);
    } else {
      chosen = names.filter(([name]) => name.includes(q)).slice(0, 48);
    }
    clear(grid);
    for (const e of Object.values(app.state.emoji)) {
      if (!e.deactivated && (!q || e.name.includes(q))) {
        grid.append(h("button", { type: "button", class: "picker-emoji", title: `:${e.name}:`, "aria-label": e.name, onclick: () => pick({ emoji_name: e.name, emoji_code: String(e.id), reaction_type: "realm_emoji" }) },
          h("img", { src: e.source_url, alt: "", class: "emoji" })));
      }
    }
    for (const [name, code] of chosen) {
      grid.append(h("button", { type: "button", class: "picker-emoji", title: `:${name}:`, "aria-label": name, onclick: () => pick({ emoji_name: name, emoji_code: code, reaction_type: "unicode_emoji" }) }, emojiImage(code, name)));
    }
    if (!grid.children.length) grid.append(h("p", { class: "picker-empty", text: t("No emoji found") }));
  };
  search.addEventListener("input", draw);
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      closeEmojiPicker();
      anchor.focus();
    } else if (event.key === "Enter" && event.target === search) {
      event.preventDefault();
      const first = grid.querySelector("button");
      if (first) first.click();
    }
  });
  document.body.append(dialog);
  placeNear(dialog, anchor);
  draw();
  search.focus();
  setTimeout(() => document.addEventListener("mousedown", outside), 0);
}

function outside(event) {
  const picker = document.getElementById("emoji-picker");
  if (picker && !picker.contains(event.target)) closeEmojiPicker();
}

export function closeEmojiPicker() {
  const picker = document.getElementById("emoji-picker");
  if (picker) picker.remove();
  document.removeEventListener("mousedown", outside);
}

// Places a fixed-position popover below (or above) an anchor, inside the window.
export function placeNear(popover, anchor) {
  const rect = anchor.getBoundingClientRect();
  const width = popover.offsetWidth;
  const height = popover.offsetHeight;
  const left = Math.max(8, Math.min(window.innerWidth - width - 8, rect.right - width));
  const below = rect.bottom + 4 + height < window.innerHeight;
  popover.style.left = `${left}px`;
  popover.style.top = `${below ? rect.bottom + 4 : Math.max(8, rect.top - height - 4)}px`;
}
