// Every user-visible string of the client goes through t() or tn(). The page carries the
// catalog of its one language (the server's gettext catalog cut to the client's messages,
// in <script id="i18n-catalog">); English is the source, so a missing entry shows the
// English text. Keep whole sentences in one call (word order differs between languages)
// and name the placeholders: t("{name} is typing…", { name }).

function readCatalog() {
  const el = typeof document !== "undefined" ? document.getElementById("i18n-catalog") : null;
  if (!el) return { language: "en", dir: "ltr", messages: {} };
  try {
    return JSON.parse(el.textContent);
  } catch {
    return { language: "en", dir: "ltr", messages: {} };
  }
}

let catalog = readCatalog();
let plurals = new Intl.PluralRules(catalog.language);

// Replace the catalog (tests, or a language change without a reload).
export function setCatalog(next) {
  catalog = { language: "en", dir: "ltr", messages: {}, ...next };
  plurals = new Intl.PluralRules(catalog.language);
  applyDocumentLanguage();
}

export function language() {
  return catalog.language;
}

export function direction() {
  return catalog.dir;
}

export function applyDocumentLanguage(root = typeof document !== "undefined" ? document.documentElement : null) {
  if (!root) return;
  root.lang = catalog.language;
  root.dir = catalog.dir;
}

function fill(text, values) {
  if (!values) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? format(name, values[name]) : whole));
}

function format(name, value) {
  return name === "n" && typeof value === "number" ? formatNumber(value) : String(value);
}

// Marks a literal for the catalog where it is defined; t() translates it where it is shown.
export function N_(text) {
  return text;
}

export function t(text, values) {
  const found = catalog.messages[text];
  return fill(typeof found === "string" ? found : text, values);
}

// The count-dependent form: tn("{n} message", "{n} messages", n). The language's plural
// rule (Intl.PluralRules: one, two, few, many, other…) picks the translated form.
export function tn(one, other, n, values = {}) {
  const forms = catalog.messages[one];
  const all = { n, ...values };
  if (forms && typeof forms === "object") {
    const form = forms[plurals.select(n)] ?? forms.other;
    if (form) return fill(form, all);
  }
  return fill(n === 1 ? one : other, all);
}

const numberFormats = new Map();
export function formatNumber(n, options = {}) {
  const key = JSON.stringify(options);
  if (!numberFormats.has(key)) numberFormats.set(key, new Intl.NumberFormat(catalog.language, options));
  return numberFormats.get(key).format(n);
}

const dateFormats = new Map();
// A date in the page's language: formatDate(date, { dateStyle: "medium" }).
export function formatDate(date, options = { dateStyle: "medium" }) {
  const key = JSON.stringify(options);
  if (!dateFormats.has(key)) dateFormats.set(key, new Intl.DateTimeFormat(catalog.language, options));
  return dateFormats.get(key).format(date);
}

applyDocumentLanguage();
