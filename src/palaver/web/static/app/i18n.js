// Every user-visible string of the client goes through t(): today it returns the English
// text with its {placeholders} filled in; a translation layer replaces the lookup here
// without touching the callers. Keep whole sentences in one call (word order differs
// between languages) and name the placeholders.

export function t(text, values) {
  if (!values) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

// The count-dependent form: tn("{n} message", "{n} messages", n).
export function tn(one, other, n, values = {}) {
  return t(n === 1 ? one : other, { n, ...values });
}
