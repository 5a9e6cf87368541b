// The compose box's dialogs: the server's preview, saved snippets, sending later and the
// list of scheduled messages. Loaded on first use.

import { t } from "../i18n.js";
import { h, clear, formatDateTime, setHtml, toast, channelRef } from "./dom.js";
import { placeNear } from "./emoji_picker.js";
import { dialog } from "./menus.js";

export async function togglePreview(compose) {
  if (!compose.preview.hidden) {
    compose.showEditor();
    compose.content.focus();
    return;
  }
  const content = compose.content.value;
  compose.previewButton.setAttribute("aria-pressed", "true");
  compose.previewButton.textContent = t("Edit");
  compose.content.hidden = true;
  compose.preview.hidden = false;
  compose.preview.textContent = content.trim() ? t("Rendering…") : t("Nothing to preview.");
  if (!content.trim()) return;
  try {
    const data = await compose.app.api.post("/messages/render", { content });
    if (!compose.preview.hidden) setHtml(clear(compose.preview), data.rendered);
  } catch (error) {
    compose.showEditor();
    compose.app.showError(error);
  }
}

// ---- saved snippets -------------------------------------------------------------------------

export async function openSnippets(compose, anchor) {
  const app = compose.app;
  let snippets = [];
  try {
    snippets = (await app.api.get("/saved_snippets")).saved_snippets || [];
  } catch (error) {
    app.showError(error);
    return;
  }
  const existing = document.getElementById("snippets");
  if (existing) existing.remove();
  const close = () => {
    panel.remove();
    document.removeEventListener("mousedown", outside);
  };
  const outside = (event) => !panel.contains(event.target) && close();
  const list = h("ul", { class: "drafts-list" });
  for (const snippet of snippets) {
    list.append(h("li", {},
      h("button", { type: "button", class: "draft-restore", onclick: () => {
        close();
        compose.insertAtCaret(snippet.content);
        compose.onInput();
        compose.content.focus();
      } }, h("strong", { text: snippet.title }), h("span", { text: snippet.content.slice(0, 80) })),
      h("button", { type: "button", class: "icon-button", "aria-label": t("Delete snippet {title}", { title: snippet.title }), text: "🗑", onclick: async () => {
        try {
          await app.api.del(`/saved_snippets/${snippet.id}`);
          close();
          openSnippets(compose, anchor);
        } catch (error) {
          app.showError(error);
        }
      } })));
  }
  const title = h("input", { type: "text", id: "snippet-title", required: true, maxlength: 60 });
  const body = h("textarea", { id: "snippet-content", rows: 3, required: true, value: compose.content.value });
  const form = h("form", { class: "snippet-form" },
    h("label", { for: "snippet-title", text: t("Title") }), title,
    h("label", { for: "snippet-content", text: t("Content") }), body,
    h("button", { type: "submit", text: t("Save snippet") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await app.api.post("/saved_snippets", { title: title.value.trim(), content: body.value });
      toast(t("Snippet saved"));
      close();
      openSnippets(compose, anchor);
    } catch (error) {
      app.showError(error);
    }
  });
  const panel = h("div", { id: "snippets", class: "popover drafts", role: "dialog", "aria-label": t("Saved snippets") },
    h("h2", { text: t("Saved snippets") }),
    snippets.length ? list : h("p", { class: "side-empty", text: t("No saved snippets yet.") }),
    h("details", { open: !snippets.length }, h("summary", { text: t("Add a snippet") }), form));
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
      anchor.focus();
    }
  });
  document.body.append(panel);
  placeNear(panel, anchor);
  (panel.querySelector(".draft-restore") || title).focus();
  setTimeout(() => document.addEventListener("mousedown", outside), 0);
}

// ---- sending later --------------------------------------------------------------------------

function localInputValue(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

// Tomorrow at nine, and the like: {label, date}.
function presets() {
  const now = new Date();
  const inAnHour = new Date(now.getTime() + 3600e3);
  const tomorrow = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1, 9, 0);
  const monday = new Date(now.getFullYear(), now.getMonth(), now.getDate() + ((8 - now.getDay()) % 7 || 7), 9, 0);
  return [[t("In one hour"), inAnHour], [t("Tomorrow at 9:00"), tomorrow], [t("Monday at 9:00"), monday]];
}

// A date and time picker with presets; onPick(unix seconds).
function whenDialog(title, submitLabel, onPick, returnFocus) {
  const input = h("input", { type: "datetime-local", id: "when-input", required: true, value: localInputValue(presets()[1][1]) });
  const choices = h("div", { class: "status-presets" }, presets().map(([label, date]) => h("button", { type: "button", class: "link-button", text: label, onclick: () => {
    input.value = localInputValue(date);
  } })));
  return dialog(title, [choices, h("label", { for: "when-input", text: t("Date and time") }), input], {
    submitLabel,
    returnFocus,
    onSubmit: () => {
      const when = Math.floor(new Date(input.value).getTime() / 1000);
      if (!when || when * 1000 <= Date.now()) {
        toast(t("Choose a time in the future."), "error");
        return false;
      }
      return onPick(when);
    },
  });
}

export function openSchedule(compose) {
  const app = compose.app;
  if (!compose.content.value.trim()) {
    toast(t("Write the message first."), "error");
    return;
  }
  let target;
  try {
    target = compose.target();
  } catch (error) {
    toast(error.message, "error");
    return;
  }
  whenDialog(t("Schedule message"), t("Schedule"), async (when) => {
    const params = target.type === "stream"
      ? { type: "stream", to: target.to, topic: target.topic, content: compose.content.value, scheduled_delivery_timestamp: when }
      : { type: "direct", to: target.to, content: compose.content.value, scheduled_delivery_timestamp: when };
    try {
      await app.api.post("/scheduled_messages", params);
    } catch (error) {
      app.showError(error);
      return false;
    }
    compose.clearContent();
    toast(t("Message scheduled for {when}", { when: formatDateTime(when) }));
    refreshScheduledCount(compose);
    return true;
  // The emptied message box takes the focus back: on a phone the button that opened the
  // dialog folds away with an empty box (app.css).
  }, compose.content);
}

export async function refreshScheduledCount(compose) {
  try {
    const items = (await compose.app.api.get("/scheduled_messages")).scheduled_messages || [];
    compose.scheduledButton.hidden = !items.length;
    compose.scheduledButton.textContent = t("Scheduled ({n})", { n: items.length });
    return items;
  } catch {
    return [];
  }
}

export async function openScheduled(compose) {
  const app = compose.app;
  const items = await refreshScheduledCount(compose);
  const list = h("ul", { class: "scheduled-list" });
  const where = (item) => (item.type === "stream" ? [channelRef(app.state.subs.name(item.to)), " > ", h("bdi", { text: item.topic })] : item.to.map((id) => app.state.users.name(id)).join(", "));
  let close = () => {};
  for (const item of items) {
    list.append(h("li", {},
      h("div", { class: "scheduled-head" }, h("strong", { text: formatDateTime(item.scheduled_delivery_timestamp) }), h("span", {}, where(item))),
      h("p", { class: "scheduled-text", text: item.content }),
      h("div", { class: "row" },
        h("button", { type: "button", text: t("Edit"), onclick: async () => {
          // Back into the compose box; it is scheduled again (or sent) from there.
          try {
            await app.api.del(`/scheduled_messages/${item.scheduled_message_id}`);
          } catch (error) {
            app.showError(error);
            return;
          }
          close();
          if (item.type === "stream") compose.start("stream", { streamId: item.to, topic: item.topic, content: item.content });
          else compose.start("dm", { userIds: item.to, content: item.content });
          refreshScheduledCount(compose);
        } }),
        h("button", { type: "button", class: "danger", text: t("Cancel message"), onclick: async () => {
          try {
            await app.api.del(`/scheduled_messages/${item.scheduled_message_id}`);
          } catch (error) {
            app.showError(error);
            return;
          }
          close();
          toast(t("Scheduled message cancelled"));
          refreshScheduledCount(compose);
        } }))));
  }
  ({ close } = dialog(t("Scheduled messages"), items.length ? list : h("p", { text: t("No scheduled messages.") })));
}

export function openReminder(app, messageId) {
  whenDialog(t("Remind me about this message"), t("Set reminder"), async (when) => {
    try {
      await app.api.post("/reminders", { message_id: messageId, scheduled_delivery_timestamp: when });
    } catch (error) {
      app.showError(error);
      return false;
    }
    toast(t("Reminder set for {when}", { when: formatDateTime(when) }));
    return true;
  });
}
