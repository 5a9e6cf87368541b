// A tiny DOM builder. Text always goes in as text (never parsed as HTML); the only HTML the
// app inserts is the server's rendered message content, through setHtml().

import { language, t } from "../i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "value") el.value = value;
    else if (key === "checked" || key === "selected" || key === "disabled" || key === "hidden") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// "#name" of a channel in its own bidi isolate (direction from its first strong letter): in a
// right-to-left page a Latin name would otherwise take the "#" to its far side ("name#").
export function channelRef(name, attrs = {}) {
  return h("bdi", { class: "channel-ref", ...attrs, text: `#${name}` });
}

// The same for plain text that cannot hold markup (an <option>, a datalist entry, a toast,
// the page title, a confirm()): the text between FIRST STRONG ISOLATE and POP DIRECTIONAL
// ISOLATE.
export function isolateText(text) {
  return `\u2068${text}\u2069`;
}

// Server-rendered message HTML (already sanitized by the server's Markdown renderer).
// Unicode emoji become the server's pictures: many machines have no colour emoji font.
export function setHtml(el, html) {
  el.innerHTML = html;
  for (const span of el.querySelectorAll("span.emoji")) {
    const code = [...span.classList].find((c) => c.startsWith("emoji-"))?.slice("emoji-".length);
    if (code) span.replaceChildren(emojiImage(code, span.title || span.textContent.replaceAll(":", "")));
  }
  return el;
}

let emojiset = "google";

// The person's emoji set (user setting emojiset): "text" shows emoji as their :names:.
export function setEmojiset(name) {
  emojiset = name || "google";
}

// A Unicode emoji as the picture Palaver serves (drawn from a packaged emoji font), or
// its name with the "text" emoji set.
export function emojiImage(code, name) {
  if (emojiset === "text") return h("span", { class: "emoji-text", title: `:${name}:`, text: `:${name}:` });
  const set = emojiset === "twitter" ? "twitter" : "google";
  return h("img", { class: "emoji-img", src: `/static/generated/emoji/images-${set}-64/${code}.png`, alt: `:${name}:`, title: `:${name}:`, loading: "lazy" });
}

// A person's status emoji (with its text as the tooltip), or null.
export function statusEmoji(state, userId, customEmoji = state.emoji) {
  const status = state.statuses.get(userId);
  if (!status || !status.emoji_name) return null;
  const title = status.status_text ? `:${status.emoji_name}: ${status.status_text}` : `:${status.emoji_name}:`;
  let glyph;
  if (status.reaction_type === "realm_emoji" && customEmoji[status.emoji_code]) glyph = h("img", { class: "emoji-img", src: customEmoji[status.emoji_code].source_url, alt: `:${status.emoji_name}:` });
  else if (status.reaction_type === "unicode_emoji" || !status.reaction_type) glyph = emojiImage(status.emoji_code, status.emoji_name);
  else glyph = `:${status.emoji_name}:`;
  return h("span", { class: "status-emoji", title }, glyph);
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// A list rebuilt from scratch (a sidebar) must not be replaced between a press and its
// release on it: the browser would then send the click to the common parent of the old
// and new elements, not to the link, and the tap would be lost. So a render asked for
// while a pointer is down inside root waits until the click has been dispatched.
export function renderAfterPress(root, render) {
  let pressed = false;
  let deferred = false;
  root.addEventListener("pointerdown", () => { pressed = true; });
  const release = () => {
    if (!pressed) return;
    pressed = false;
    // The click follows pointerup in the same input task; run after it.
    if (deferred) setTimeout(() => { deferred = false; render(); }, 0);
  };
  window.addEventListener("pointerup", release, true);
  window.addEventListener("pointercancel", release, true);
  return () => {
    if (pressed) deferred = true;
    else render();
  };
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}

export function initials(name) {
  const parts = String(name).split(/[\s,]+/).filter(Boolean);
  return ((parts[0] || "?")[0] + (parts.length > 1 ? parts[parts.length - 1][0] : "")).toUpperCase();
}

// Avatar URLs that failed once (e.g. an external host blocked or unreachable) are not retried.
const brokenAvatars = new Set();

// An avatar image that falls back to initials when the image fails to load.
export function avatar(user, size = "normal") {
  const name = user ? user.full_name : "?";
  const box = h("span", { class: `avatar avatar-${size}`, "aria-hidden": "true" });
  const fallback = () => {
    if (user && user.avatar_url) brokenAvatars.add(user.avatar_url);
    box.replaceChildren(h("span", { class: "avatar-initials", text: initials(name) }));
  };
  if (user && user.avatar_url && !brokenAvatars.has(user.avatar_url)) {
    const img = h("img", { src: user.avatar_url, alt: "", loading: "lazy", width: 32, height: 32 });
    img.addEventListener("error", fallback, { once: true });
    box.append(img);
  } else {
    fallback();
  }
  return box;
}

// Intl formatters are costly to make: one of each, reused for every message.
let TIME = new Intl.DateTimeFormat(language(), { hour: "2-digit", minute: "2-digit" });
let DATE_TIME = new Intl.DateTimeFormat(language(), { dateStyle: "medium", timeStyle: "short" });

// The person's time format (user setting twenty_four_hour_time), for every time shown.
export function setTimeFormat(twentyFour) {
  const hourCycle = twentyFour ? "h23" : "h12";
  TIME = new Intl.DateTimeFormat(language(), { hour: "2-digit", minute: "2-digit", hourCycle });
  DATE_TIME = new Intl.DateTimeFormat(language(), { dateStyle: "medium", timeStyle: "short", hourCycle });
}
const DAY = new Intl.DateTimeFormat(language(), { weekday: "short", month: "short", day: "numeric" });
const DAY_YEAR = new Intl.DateTimeFormat(language(), { weekday: "short", month: "short", day: "numeric", year: "numeric" });

// The display settings that are not the theme: time format, emoji set, and the size and
// line height of message text (CSS variables read by app.css).
export function applyDisplaySettings(settings, root = document.documentElement) {
  setTimeFormat(Boolean(settings.twenty_four_hour_time));
  setEmojiset(settings.emojiset);
  if (settings.web_font_size_px) root.style.setProperty("--message-font-size", `${settings.web_font_size_px}px`);
  if (settings.web_line_height_percent) root.style.setProperty("--message-line-height", String(settings.web_line_height_percent / 100));
}

export function formatTime(timestamp) {
  return TIME.format(new Date(timestamp * 1000));
}

export function formatDateTime(timestamp) {
  return DATE_TIME.format(new Date(timestamp * 1000));
}

export function formatDay(timestamp) {
  const date = new Date(timestamp * 1000);
  const today = new Date();
  if (date.toDateString() === today.toDateString()) return t("Today");
  return (date.getFullYear() === today.getFullYear() ? DAY : DAY_YEAR).format(date);
}

const TOASTS_SHOWN = 3;

// A short-lived notice under the top bar (role=status, so screen readers hear it). At most
// three show at once, newest last; the same text again restarts its notice rather than
// adding one; a click dismisses one.
export function toast(text, kind = "info") {
  const region = document.getElementById("toasts");
  if (!region) return;
  for (const old of region.children) {
    if (old.textContent === text) {
      clearTimeout(old.expiry);
      old.remove();
    }
  }
  const item = h("div", { class: `toast toast-${kind}`, text, onclick: () => item.remove() });
  region.append(item);
  while (region.children.length > TOASTS_SHOWN) region.firstElementChild.remove();
  item.expiry = setTimeout(() => item.remove(), kind === "error" ? 6000 : 3000);
}

// Announces text to screen readers without showing it.
export function announce(text) {
  const region = document.getElementById("announcer");
  if (region) region.textContent = text;
}

export function unicodeEmoji(code) {
  try {
    return String.fromCodePoint(...code.split("-").map((part) => parseInt(part, 16)));
  } catch {
    return "?";
  }
}

// Keeps Tab and Shift+Tab inside a modal dialog, as aria-modal promises.
export function trapFocus(container) {
  container.addEventListener("keydown", (event) => {
    if (event.key !== "Tab") return;
    const focusable = [...container.querySelectorAll("a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex='0']")]
      .filter((el) => el.offsetParent !== null);
    if (!focusable.length) return;
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
}
