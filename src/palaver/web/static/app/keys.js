// Zulip's keyboard shortcuts. Letters act only when no text field has the focus.

import { closeEmojiPicker } from "./views/emoji_picker.js";
import { closeMenu } from "./views/menus.js";
import { moveRecentFocus } from "./views/overview.js";
import { h, trapFocus } from "./views/dom.js";
import { N_, t } from "./i18n.js";

function typingInField(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

export function installShortcuts(app) {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") {
      if (closeOverlays(app)) {
        event.preventDefault();
        return;
      }
      if (typingInField(event.target)) {
        event.target.blur();
        app.focusFeed();
        event.preventDefault();
      }
      return;
    }
    if (typingInField(event.target) || document.querySelector(".overlay")) return;
    const selected = app.selectedId;
    const move = (step) => (app.current.view === "recent" ? moveRecentFocus(step) : app.moveSelection(step));
    const handlers = {
      "/": () => app.focusSearch(),
      c: () => app.composeNewTopic(),
      x: () => app.compose.start("dm"),
      r: () => selected && app.replyTo(selected),
      Enter: () => selected && !event.target.closest("a,button") && app.replyTo(selected),
      n: () => app.nextUnreadTopic(),
      // In Recent conversations the keys move between rows (views/overview.js).
      j: () => move(1),
      k: () => move(-1),
      ArrowDown: () => move(1),
      ArrowUp: () => move(-1),
      e: () => selected && app.actions.edit(selected),
      s: () => selected && app.actions.toggleStar(selected),
      "?": () => showShortcuts(),
    };
    const handler = handlers[event.key];
    if (!handler) return;
    // Arrow keys keep scrolling lists and menus that have the focus.
    if (event.key.startsWith("Arrow") && !event.target.closest("#main") && event.target !== document.body) return;
    event.preventDefault();
    handler();
  });
}

// Closes the topmost popover or dialog; true if there was one.
function closeOverlays(app) {
  const popover = document.querySelector("#emoji-picker, #message-menu, .popover");
  if (popover) {
    closeEmojiPicker();
    closeMenu();
    popover.remove();
    return true;
  }
  const overlay = document.querySelector(".overlay");
  if (overlay) {
    overlay.remove();
    app.focusFeed();
    return true;
  }
  if (document.body.classList.contains("show-left") || document.body.classList.contains("show-right")) {
    document.body.classList.remove("show-left", "show-right");
    return true;
  }
  return false;
}

export const SHORTCUTS = [
  ["c", N_("New topic in this channel")], ["x", N_("New direct message")], ["r / Enter", N_("Reply to the selected message")],
  ["n", N_("Next unread topic")], ["/", N_("Search")], ["j / ↓", N_("Next message")], ["k / ↑", N_("Previous message")],
  ["e", N_("Edit the selected message")], ["s", N_("Star the selected message")], ["Esc", N_("Close, or leave the compose box")], ["?", N_("This list")],
];

// The "?" dialog listing the shortcuts.
export function showShortcuts() {
  const close = () => overlay.remove();
  const list = h("dl", { class: "shortcuts" }, ...SHORTCUTS.flatMap(([key, what]) => [h("dt", {}, h("kbd", { text: key })), h("dd", { text: t(what) })]));
  const overlay = h("div", { class: "overlay" },
    h("div", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "shortcuts-title" },
      h("h2", { id: "shortcuts-title", text: t("Keyboard shortcuts") }), list,
      h("div", { class: "dialog-buttons" }, h("button", { type: "button", text: t("Close"), onclick: close }))));
  trapFocus(overlay);
  document.body.append(overlay);
  overlay.querySelector("button").focus();
}
