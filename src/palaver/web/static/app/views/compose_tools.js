// The compose box's toolbar: Markdown formatting around the selection, /poll and /todo
// templates, emoji, upload, a video call link, the server's preview, saved snippets and
// sending later. The dialogs live in compose_extra.js, loaded on first use.

import { t } from "../i18n.js";
import { h } from "./dom.js";
import { openEmojiPicker } from "./emoji_picker.js";

// Replaces the selection with before + selection (or placeholder) + after, selecting the
// inner text so typing replaces it.
export function wrapSelection(textarea, before, after, placeholder) {
  const start = textarea.selectionStart;
  const end = textarea.selectionEnd;
  const inner = textarea.value.slice(start, end) || placeholder;
  textarea.setRangeText(before + inner + after, start, end, "end");
  textarea.setSelectionRange(start + before.length, start + before.length + inner.length);
  textarea.focus();
}

// A block (fence, template) on lines of its own.
function insertBlock(textarea, text, selectFrom, selectLength) {
  const start = textarea.selectionStart;
  const end = textarea.selectionEnd;
  const lead = start > 0 && textarea.value[start - 1] !== "\n" ? "\n" : "";
  const trail = end < textarea.value.length && textarea.value[end] !== "\n" ? "\n" : "";
  textarea.setRangeText(lead + text + trail, start, end, "end");
  const at = start + lead.length + selectFrom;
  textarea.setSelectionRange(at, at + selectLength);
  textarea.focus();
}

function fenced(textarea, info, placeholder) {
  const selected = textarea.value.slice(textarea.selectionStart, textarea.selectionEnd) || placeholder;
  const head = "```" + info + "\n";
  insertBlock(textarea, `${head}${selected}\n\`\`\``, head.length, selected.length);
}

export function videoCallUrl(realm) {
  if (realm.realm_video_chat_provider !== 1) return null;
  const base = (realm.realm_jitsi_server_url || realm.server_jitsi_server_url || "https://meet.jit.si").replace(/\/$/, "");
  const room = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${base}/${room}`;
}

// Each button's glyph is one that common system fonts carry: many machines have no colour
// emoji font.
export function toolbar(compose) {
  const ta = compose.content;
  const changed = () => compose.onInput();
  const tool = (label, text, run, extra = {}) => h("button", { type: "button", class: "icon-button tool", "aria-label": label, title: label, text, ...extra, onclick: (event) => {
    run(event);
    changed();
  } });
  const extra = (name) => (event) => {
    const button = event.currentTarget;
    import("./compose_extra.js").then((m) => m[name](compose, button));
  };
  const bar = h("div", { class: "compose-toolbar", role: "toolbar", "aria-label": t("Formatting") },
    tool(t("Bold"), "B", () => wrapSelection(ta, "**", "**", t("bold text")), { class: "icon-button tool bold" }),
    tool(t("Italic"), "I", () => wrapSelection(ta, "*", "*", t("italic text")), { class: "icon-button tool italic" }),
    tool(t("Link"), "↗", () => {
      const start = ta.selectionStart;
      const label = ta.value.slice(start, ta.selectionEnd) || t("link text");
      ta.setRangeText(`[${label}](url)`, start, ta.selectionEnd, "end");
      ta.setSelectionRange(start + label.length + 3, start + label.length + 6);
      ta.focus();
    }),
    tool(t("Code"), "</>", () => {
      const selected = ta.value.slice(ta.selectionStart, ta.selectionEnd);
      if (selected.includes("\n")) fenced(ta, "", selected);
      else wrapSelection(ta, "`", "`", t("code"));
    }),
    tool(t("Quote"), "❝", () => fenced(ta, "quote", t("quoted text"))),
    tool(t("Spoiler"), "▸", () => fenced(ta, `spoiler ${t("Header")}`, t("hidden text"))),
    tool(t("Math (LaTeX)"), "∑", () => wrapSelection(ta, "$$", "$$", "e^{i\\pi} + 1 = 0")),
    tool(t("Add a poll"), "▤", () => {
      const question = t("Question");
      insertBlock(ta, `/poll ${question}\n${t("Option 1")}\n${t("Option 2")}`, 6, question.length);
    }),
    tool(t("Add a to-do list"), "☑", () => {
      const title = t("Task list");
      insertBlock(ta, `/todo ${title}\n${t("First task")}\n${t("Second task: its description")}`, 6, title.length);
    }),
    tool(t("Emoji"), "☺", (event) => openEmojiPicker(compose.app, event.currentTarget, (emoji) => {
      compose.insertAtCaret(`:${emoji.emoji_name}: `);
      changed();
      ta.focus();
    })),
    tool(t("Upload files"), "⇧", () => compose.file.click()),
    tool(t("Add a video call"), "☏", () => {
      const url = videoCallUrl(compose.app.state.realm);
      if (!url) {
        compose.app.showError(new Error(t("No video call provider is set up for this organization.")));
        return;
      }
      insertBlock(ta, `[${t("Join video call.")}](${url})`, 0, 0);
    }),
    tool(t("Saved snippets"), "✂", extra("openSnippets"), { "aria-haspopup": "dialog" }),
    h("span", { class: "toolbar-gap" }),
    compose.previewButton = h("button", { type: "button", class: "link-button", "aria-pressed": "false", text: t("Preview"), onclick: () => import("./compose_extra.js").then((m) => m.togglePreview(compose)) }));
  return bar;
}
