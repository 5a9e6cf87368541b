// What one can do to a message: react, star, edit, delete, move or resolve its topic, copy a
// link, quote and reply, report it to the moderators. Each action calls the API; the
// resulting event updates the page.

import { narrowToHash } from "../narrow.js";
import { t } from "../i18n.js";
import { h, toast, trapFocus, isolateText } from "./dom.js";
import { openEmojiPicker } from "./emoji_picker.js";
import { showMenu } from "./menus.js";

const RESOLVED_PREFIX = "✔ ";

export class MessageActions {
  constructor(app) {
    this.app = app;
  }

  message(id) {
    return this.app.state.messages.get(id);
  }

  async toggleReaction(id, emoji) {
    const message = this.message(id);
    if (!message) return;
    const mine = (message.reactions || []).some((r) => r.user_id === this.app.state.myId && r.emoji_code === emoji.emoji_code && r.reaction_type === emoji.reaction_type);
    try {
      if (mine) await this.app.api.del(`/messages/${id}/reactions`, emoji);
      else await this.app.api.post(`/messages/${id}/reactions`, emoji);
    } catch (error) {
      this.app.showError(error);
    }
  }

  openEmojiPicker(id, anchor) {
    openEmojiPicker(this.app, anchor, (emoji) => this.toggleReaction(id, emoji));
  }

  async toggleStar(id) {
    const message = this.message(id);
    if (!message) return;
    const starred = (message.flags || []).includes("starred");
    try {
      await this.app.api.post("/messages/flags", { messages: [id], op: starred ? "remove" : "add", flag: "starred" });
    } catch (error) {
      this.app.showError(error);
    }
  }

  async rawContent(id) {
    const data = await this.app.api.get(`/messages/${id}`, { apply_markdown: false });
    return data.raw_content ?? data.message.content;
  }

  link(id) {
    const message = this.message(id);
    const lookup = this.app.lookup;
    const terms = message.type === "stream"
      ? [{ operator: "channel", operand: message.stream_id }, { operator: "topic", operand: message.subject }]
      : [{ operator: "dm", operand: message.display_recipient.map((u) => u.id) }];
    return `${window.location.origin}/${narrowToHash([...terms, { operator: "near", operand: id }], lookup)}`;
  }

  async copyLink(id) {
    const url = this.link(id);
    try {
      await navigator.clipboard.writeText(url);
      toast(t("Link copied"));
    } catch {
      window.prompt(t("Copy this link"), url);
    }
  }

  async quoteAndReply(id) {
    const message = this.message(id);
    try {
      const raw = await this.rawContent(id);
      const quoted = `@_**${message.sender_full_name}** [said](${this.link(id)}):\n\`\`\`quote\n${raw}\n\`\`\`\n`;
      this.app.replyTo(id, quoted);
    } catch (error) {
      this.app.showError(error);
    }
  }

  // Inline editor in place of the message content; Enter saves, Escape cancels.
  async edit(id) {
    const message = this.message(id);
    const article = document.querySelector(`article.message[data-id="${id}"]`);
    if (!message || !article || !this.app.state.permissions.canEdit(message)) {
      toast(t("You cannot edit this message"), "error");
      return;
    }
    let raw;
    try {
      raw = await this.rawContent(id);
    } catch (error) {
      this.app.showError(error);
      return;
    }
    const content = article.querySelector(".msg-content");
    const textarea = h("textarea", { class: "edit-box", dir: "auto", "aria-label": t("Edit message"), value: raw, rows: Math.min(12, raw.split("\n").length + 1) });
    const cancel = () => {
      this.app.feed.editing = null;
      this.app.feed.updateMessage(id);
    };
    const saveButton = h("button", { type: "submit", class: "primary", text: t("Save") });
    const saving = (on) => {
      textarea.readOnly = on;
      saveButton.disabled = on;
      saveButton.textContent = on ? t("Saving…") : t("Save");
      saveButton.setAttribute("aria-busy", String(on));
    };
    const save = async () => {
      const text = textarea.value;
      if (textarea.readOnly) return;
      if (text === raw) return cancel();
      // Shown as typed once the editor closes, until the server's update_message (which
      // always follows a content edit, and clears it) brings the rendered content.
      const edited = this.message(id);
      if (edited) edited.pending_edit = text;
      saving(true);
      try {
        await this.app.api.patch(`/messages/${id}`, { content: text });
        cancel();
      } catch (error) {
        const current = this.message(id);
        if (current) delete current.pending_edit;
        saving(false);
        this.app.showError(error);
      }
    };
    const form = h("form", { class: "edit-form" }, textarea,
      h("div", { class: "edit-buttons" },
        saveButton,
        h("button", { type: "button", text: t("Cancel"), onclick: cancel })));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      save();
    });
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        save();
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        cancel();
      }
    });
    content.replaceWith(form);
    this.app.feed.editing = { id, form };
    textarea.focus();
    textarea.setSelectionRange(textarea.value.length, textarea.value.length);
  }

  async remove(id) {
    if (!window.confirm(t("Delete this message?"))) return;
    try {
      await this.app.api.del(`/messages/${id}`);
    } catch (error) {
      this.app.showError(error);
    }
  }

  async resolve(id) {
    const message = this.message(id);
    const topic = message.subject;
    const resolved = topic.startsWith(RESOLVED_PREFIX);
    const newTopic = resolved ? topic.slice(RESOLVED_PREFIX.length) : RESOLVED_PREFIX + topic;
    await this.moveTo(id, { topic: newTopic, propagate_mode: "change_all" });
  }

  async moveTo(id, params) {
    try {
      await this.app.api.patch(`/messages/${id}`, params);
    } catch (error) {
      this.app.showError(error);
    }
  }

  // A small form: new topic (and channel, where allowed), which messages to move.
  // message: the one moved, or (from a topic menu) its channel and topic.
  openMove(id, message = this.message(id)) {
    const { state } = this.app;
    const perms = state.permissions;
    const topic = h("input", { id: "move-topic", type: "text", value: message.subject, required: true });
    const channel = h("select", { id: "move-channel", disabled: !perms.canMoveChannel(message) });
    for (const sub of state.subs.sorted()) channel.append(h("option", { value: sub.stream_id, text: isolateText(`#${sub.name}`), selected: sub.stream_id === message.stream_id }));
    const mode = h("select", { id: "move-mode" },
      h("option", { value: "change_all", text: t("All messages in the topic") }),
      h("option", { value: "change_later", text: t("This and later messages") }),
      h("option", { value: "change_one", text: t("Only this message") }));
    const close = () => overlay.remove();
    const form = h("form", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "move-title" },
      h("h2", { id: "move-title", text: t("Move messages") }),
      h("label", { for: "move-channel", text: t("Channel") }), channel,
      h("label", { for: "move-topic", text: t("Topic") }), topic,
      h("label", { for: "move-mode", text: t("Move") }), mode,
      h("div", { class: "dialog-buttons" },
        h("button", { type: "submit", class: "primary", text: t("Move") }),
        h("button", { type: "button", text: t("Cancel"), onclick: close })));
    const overlay = h("div", { class: "overlay" }, form);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const params = { propagate_mode: mode.value };
      if (topic.value !== message.subject) params.topic = topic.value;
      if (Number(channel.value) !== message.stream_id) params.stream_id = Number(channel.value);
      close();
      if (params.topic !== undefined || params.stream_id !== undefined) await this.moveTo(id, params);
    });
    overlay.addEventListener("keydown", (event) => event.key === "Escape" && close());
    trapFocus(form);
    document.body.append(overlay);
    topic.focus();
  }

  // Report to the organization's moderators: a reason, and a description ("Other" needs one).
  openReport(id) {
    const types = this.app.state.realm.server_report_message_types || [];
    const reason = h("select", { id: "report-type" });
    for (const type of types) reason.append(h("option", { value: type.key, text: type.name }));
    const description = h("textarea", { id: "report-description", rows: 4, maxlength: 1000 });
    const close = () => overlay.remove();
    const form = h("form", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "report-title" },
      h("h2", { id: "report-title", text: t("Report message") }),
      h("label", { for: "report-type", text: t("Reason") }), reason,
      h("label", { for: "report-description", text: t("Description") }), description,
      h("div", { class: "dialog-buttons" },
        h("button", { type: "submit", class: "primary", text: t("Report") }),
        h("button", { type: "button", text: t("Cancel"), onclick: close })));
    const overlay = h("div", { class: "overlay" }, form);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await this.app.api.post(`/messages/${id}/report`, { report_type: reason.value, description: description.value });
        close();
        toast(t("Message reported to the moderators"));
      } catch (error) {
        this.app.showError(error);
      }
    });
    overlay.addEventListener("keydown", (event) => event.key === "Escape" && close());
    trapFocus(form);
    document.body.append(overlay);
    reason.focus();
  }

  // The "⋯" menu: a role=menu list of the actions this user may take on this message.
  openMenu(id, anchor) {
    const extra = (name) => import("./message_extra.js").then((m) => m[name](this.app, id));
    const message = this.message(id);
    if (!message) return;
    const perms = this.app.state.permissions;
    const items = [
      [t("Quote and reply"), () => this.quoteAndReply(id)],
      [t("Copy link to message"), () => this.copyLink(id)],
      [(message.flags || []).includes("starred") ? t("Unstar") : t("Star"), () => this.toggleStar(id)],
      perms.canEdit(message) && [t("Edit"), () => this.edit(id)],
      perms.canMoveTopic(message) && [t("Move messages…"), () => this.openMove(id)],
      perms.canResolve(message) && [message.subject.startsWith(RESOLVED_PREFIX) ? t("Unresolve topic") : t("Resolve topic"), () => this.resolve(id)],
      perms.canDelete(message) && [t("Delete"), () => this.remove(id)],
      [t("Mark as unread from here"), () => this.markUnreadFrom(id)],
      [t("Remind me about this…"), () => import("./compose_extra.js").then((m) => m.openReminder(this.app, id))],
      [t("View source"), () => extra("viewSource")],
      (message.last_edit_timestamp || message.last_moved_timestamp) && this.app.state.realm.realm_allow_edit_history !== false && [t("View edit history"), () => extra("editHistory")],
      this.app.state.realm.realm_enable_read_receipts !== false && [t("View read receipts"), () => extra("readReceipts")],
      // Offered only where the organization has a moderation request channel.
      (this.app.state.realm.realm_moderation_request_channel_id ?? -1) !== -1 && [t("Report…"), () => this.openReport(id)],
    ].filter(Boolean);
    showMenu(anchor, t("Message actions"), items);
  }

  // Everything from this message on in the current view becomes unread again; reading
  // stops marking messages read until the view changes (else they would be read at once).
  async markUnreadFrom(id) {
    const list = this.app.feed.list;
    if (!list) return;
    this.app.feed.reader.pause();
    try {
      await this.app.api.post("/messages/flags/narrow", { anchor: String(id), include_anchor: true, num_before: 0, num_after: 5000, narrow: this.app.apiNarrow(list.terms), op: "remove", flag: "read" });
    } catch (error) {
      this.app.showError(error);
    }
  }
}
