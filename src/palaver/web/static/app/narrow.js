// Narrows: which messages a view shows. Pure functions only (unit-tested in the browser).
//
// A narrow is an array of terms {operator, operand, negated}. In the app, ids are resolved:
// channel and sender operands are numbers, dm operands arrays of user ids. Three spellings
// exist: the search box text ("channel:general topic:lunch"), the URL hash
// ("#narrow/channel/12-general/topic/lunch") and the API's narrow parameter.

import { t } from "./i18n.js";

const ALIASES = { stream: "channel", streams: "channels", subject: "topic", "pm-with": "dm", "dm-including": "dm-including" };

export function canonicalOperator(operator) {
  const lower = operator.toLowerCase();
  return ALIASES[lower] || lower;
}

// ---- search box text ----------------------------------------------------------------------

// Splits on spaces, keeping "quoted values" together: topic:"lunch plans" is one token.
function tokenize(text) {
  const tokens = [];
  let current = "";
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') {
      quoted = !quoted;
    } else if (/\s/.test(ch) && !quoted) {
      if (current) tokens.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  if (current) tokens.push(current);
  return tokens;
}

const SEARCH_OPERATORS = new Set([
  "channel", "channels", "topic", "dm", "dm-including", "sender", "is", "has", "near", "with", "id", "search",
]);

// Parses search box text into terms with string operands (names, emails) as typed.
// Words that are not operator:operand join into one free-text "search" term.
export function parseSearch(text) {
  const terms = [];
  const words = [];
  for (const token of tokenize(text.trim())) {
    const colon = token.indexOf(":");
    let negated = false;
    let operator = colon > 0 ? token.slice(0, colon) : "";
    if (operator.startsWith("-")) {
      negated = true;
      operator = operator.slice(1);
    }
    operator = canonicalOperator(operator);
    const operand = colon > 0 ? token.slice(colon + 1) : "";
    if (operator && SEARCH_OPERATORS.has(operator) && operand !== "") {
      if (operator === "search") words.push(operand);
      else terms.push({ operator, operand, negated });
    } else {
      words.push(token);
    }
  }
  if (words.length) terms.push({ operator: "search", operand: words.join(" "), negated: false });
  return terms;
}

function quoteIfNeeded(value) {
  return /\s/.test(value) ? `"${value}"` : value;
}

// The search box text for resolved terms; names come from the lookup functions.
export function formatSearch(terms, lookup = {}) {
  const parts = [];
  for (const term of terms) {
    let operand = term.operand;
    if (term.operator === "channel" && typeof operand === "number") {
      operand = lookup.channelName ? lookup.channelName(operand) : String(operand);
    } else if ((term.operator === "sender" || term.operator === "dm-including") && typeof operand === "number") {
      operand = lookup.userEmail ? lookup.userEmail(operand) : String(operand);
    } else if (term.operator === "dm" && Array.isArray(operand)) {
      operand = operand.map((id) => (lookup.userEmail ? lookup.userEmail(id) : String(id))).join(",");
    }
    if (term.operator === "search") {
      parts.push(term.operand);
    } else {
      parts.push(`${term.negated ? "-" : ""}${term.operator}:${quoteIfNeeded(String(operand))}`);
    }
  }
  return parts.join(" ");
}

// Turns typed names into ids. Unknown names are kept as strings (the server then
// answers with an error, which the app shows).
export function resolveTerms(terms, lookup) {
  return terms.map((term) => {
    const { operator, operand } = term;
    if (operator === "channel" && typeof operand === "string") {
      // By name, or as a hand-written link names it, by its slug ("design-team").
      const id = /^\d+$/.test(operand) ? Number(operand) : lookup.channelId(operand);
      return { ...term, operand: id ?? operand };
    }
    if ((operator === "sender" || operator === "dm-including") && typeof operand === "string") {
      if (operand === "me") return { ...term, operand: lookup.myId };
      const id = /^\d+$/.test(operand) ? Number(operand) : lookup.userId(operand);
      return { ...term, operand: id ?? operand };
    }
    if (operator === "dm" && typeof operand === "string") {
      const ids = operand.split(",").map((part) => {
        const trimmed = part.trim();
        return /^\d+$/.test(trimmed) ? Number(trimmed) : lookup.userId(trimmed);
      });
      return { ...term, operand: ids.every((id) => typeof id === "number") ? ids : operand };
    }
    if ((operator === "near" || operator === "with" || operator === "id") && /^\d+$/.test(String(operand))) {
      return { ...term, operand: Number(operand) };
    }
    return term;
  });
}

// ---- URL hash -----------------------------------------------------------------------------

// URL-safe, readable encoding used in hashes: percent-escapes written with "." instead of "%".
export function encodeHashComponent(text) {
  return encodeURIComponent(text)
    .replace(/\./g, "%2E")
    .replace(/%/g, ".");
}

export function decodeHashComponent(text) {
  try {
    return decodeURIComponent(text.replace(/\./g, "%"));
  } catch {
    return text;
  }
}

// How a name reads in a link: "design team" is "design-team".
export function nameSlug(name) {
  return String(name).replace(/ /g, "-");
}

function slug(name) {
  return encodeHashComponent(nameSlug(name));
}

// Terms → "#narrow/..."; names (only for readability) come from lookup.
export function narrowToHash(terms, lookup = {}) {
  if (!terms.length) return "#feed";
  const parts = ["#narrow"];
  for (const term of terms) {
    const operator = (term.negated ? "-" : "") + term.operator;
    const { operand } = term;
    if (term.operator === "channel" && typeof operand === "number") {
      const name = lookup.channelName ? lookup.channelName(operand) : "";
      parts.push(operator, name ? `${operand}-${slug(name)}` : String(operand));
    } else if ((term.operator === "sender" || term.operator === "dm-including") && typeof operand === "number") {
      const name = lookup.userName ? lookup.userName(operand) : "";
      parts.push(operator, name ? `${operand}-${slug(name)}` : String(operand));
    } else if (term.operator === "dm" && Array.isArray(operand)) {
      parts.push(operator, `${operand.join(",")}-${operand.length > 1 ? "group" : "dm"}`);
    } else {
      parts.push(operator, encodeHashComponent(String(operand)));
    }
  }
  return parts.join("/");
}

// "#narrow/..." → terms (ids resolved from the "<id>-<name>" forms), or null when the hash is
// not a narrow. Special views are {view: "inbox"|"recent"|"feed"|"settings"}.
export function parseHash(hash) {
  const clean = hash.replace(/^#/, "");
  if (clean === "" || clean === "feed" || clean === "all_messages") return { view: "feed", terms: [] };
  if (clean === "inbox") return { view: "inbox", terms: [] };
  if (clean === "recent" || clean === "recent_topics") return { view: "recent", terms: [] };
  const segments = clean.split("/");
  if (segments[0] !== "narrow") return null;
  const terms = [];
  for (let i = 1; i + 1 < segments.length; i += 2) {
    let operator = segments[i];
    let negated = false;
    if (operator.startsWith("-")) {
      negated = true;
      operator = operator.slice(1);
    }
    operator = canonicalOperator(operator);
    const raw = segments[i + 1];
    let operand;
    if (operator === "channel" || operator === "sender" || operator === "dm-including") {
      const match = /^(\d+)(-|$)/.exec(raw);
      operand = match ? Number(match[1]) : decodeHashComponent(raw);
    } else if (operator === "dm") {
      const match = /^([\d,]+)(-|$)/.exec(raw);
      operand = match ? match[1].split(",").filter(Boolean).map(Number) : decodeHashComponent(raw);
    } else if (operator === "near" || operator === "with" || operator === "id") {
      operand = Number(raw);
    } else {
      operand = decodeHashComponent(raw);
    }
    terms.push({ operator, operand, negated });
  }
  return { view: "narrow", terms };
}

// ---- API and local matching ---------------------------------------------------------------

// The narrow parameter of GET /messages. "near"/"with" only choose the anchor.
export function apiNarrow(terms) {
  return terms
    .filter((t) => t.operator !== "near")
    .map((t) => ({ operator: t.operator, operand: t.operand, negated: Boolean(t.negated) }));
}

export function anchorOf(terms) {
  const near = terms.find((t) => t.operator === "near" || t.operator === "with");
  return near ? near.operand : null;
}

// A stable key for a narrow, for caching message lists.
export function narrowKey(terms) {
  return JSON.stringify(
    terms
      .filter((t) => t.operator !== "near" && t.operator !== "with")
      .map((t) => [t.negated ? "-" + t.operator : t.operator, Array.isArray(t.operand) ? [...t.operand].sort((a, b) => a - b) : t.operand])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
  );
}

// The sorted user ids of a DM conversation, without me (just me for a note to self).
export function dmKeyIds(userIds, myId) {
  const others = [...new Set(userIds)].filter((id) => id !== myId).sort((a, b) => a - b);
  return others.length ? others : [myId];
}

export function messageDmIds(message, myId) {
  const ids = Array.isArray(message.display_recipient) ? message.display_recipient.map((u) => u.id) : [];
  return dmKeyIds(ids, myId);
}

function sameTopic(a, b) {
  return String(a).toLowerCase() === String(b).toLowerCase();
}

// Whether a message belongs in a narrow; undefined when only the server can tell (full-text
// search, has:) — such narrows do not take live messages.
export function messageMatches(terms, message, myId) {
  for (const term of terms) {
    const result = termMatches(term, message, myId);
    if (result === undefined) return undefined;
    if (result === Boolean(term.negated)) return false;
  }
  return true;
}

function termMatches(term, message, myId) {
  const { operator, operand } = term;
  const flags = message.flags || [];
  switch (operator) {
    case "channel":
      return message.type === "stream" && message.stream_id === operand;
    case "topic":
      return message.type === "stream" && sameTopic(message.subject, operand);
    case "sender":
      return message.sender_id === operand;
    case "dm": {
      if (message.type !== "private" || !Array.isArray(operand)) return false;
      const want = dmKeyIds(operand, myId);
      const have = messageDmIds(message, myId);
      return want.length === have.length && want.every((id, i) => id === have[i]);
    }
    case "dm-including":
      return message.type === "private" && message.display_recipient.some((u) => u.id === operand);
    case "is":
      switch (operand) {
        case "dm":
        case "private":
          return message.type === "private";
        case "starred":
          return flags.includes("starred");
        case "mentioned":
          return flags.includes("mentioned") || flags.includes("wildcard_mentioned");
        case "unread":
          return !flags.includes("read");
        case "resolved":
          return message.type === "stream" && message.subject.startsWith("✔ ");
        default:
          return undefined;
      }
    case "near":
    case "with":
      return !term.negated;
    case "id":
      return message.id === operand;
    case "channels":
      return operand === "public" ? message.type === "stream" : undefined;
    default:
      return undefined;
  }
}

// Human title of a narrow, for the page title and the feed heading.
export function narrowTitle(terms, lookup = {}) {
  if (!terms.length) return t("All messages");
  const channel = terms.find((t) => t.operator === "channel" && !t.negated);
  const topic = terms.find((t) => t.operator === "topic" && !t.negated);
  const dm = terms.find((t) => t.operator === "dm" && !t.negated);
  const is = terms.find((t) => t.operator === "is" && !t.negated);
  if (terms.some((t) => t.operator === "search" || t.operator === "has" || t.operator === "sender")) {
    return t("Search results");
  }
  if (channel) {
    const name = lookup.channelName ? lookup.channelName(channel.operand) : channel.operand;
    return topic ? `#${name} > ${topic.operand}` : `#${name}`;
  }
  if (dm && Array.isArray(dm.operand)) {
    return dm.operand.map((id) => (lookup.userName ? lookup.userName(id) : id)).join(", ");
  }
  if (is) {
    const names = { starred: t("Starred messages"), mentioned: t("Mentions"), dm: t("Direct messages"), unread: t("Unread messages") };
    return names[is.operand] || `is:${is.operand}`;
  }
  return t("Messages");
}

// Messages in a search narrow are not marked as read by viewing them (as in Zulip).
export function isSearchNarrow(terms) {
  return terms.some((t) => t.operator === "search" || t.operator === "has");
}
