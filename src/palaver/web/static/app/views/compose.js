// The compose box: channel + topic or DM recipients, the message, uploads, typing
// notifications and drafts saved to the server as one types.

import { upload } from "../api.js";
import { dmKeyIds } from "../narrow.js";
import { Autocomplete } from "./autocomplete.js";
import { t } from "../i18n.js";
import { toolbar } from "./compose_tools.js";
import { h, clear, toast, channelRef, isolateText } from "./dom.js";
import { placeNear } from "./emoji_picker.js";

const DRAFT_SAVE_MS = 1500;
const TYPING_REPEAT_MS = 10000;
const TYPING_STOP_MS = 5000;

export class Compose {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.mode = "stream";
    this.draftId = null;
    this.draftTimer = null;
    this.typingSentAt = 0;
    this.typingStopTimer = null;
    this.typingTarget = null;
    // What the menus were last built from: each is rebuilt only when that changed.
    this.channelsKey = null;
    this.topicsKey = null;
    this.peopleStale = true;
    this.build();
  }

  build() {
    this.channel = h("select", { id: "compose-channel", onchange: () => this.onRecipientChange() });
    // What is typed in the topic and the message reads in its own direction (dir=auto: from its
    // first strong letter): Arabic in an English page right to left, Latin in an Arabic one.
    this.topic = h("input", { id: "compose-topic", type: "text", dir: "auto", list: "compose-topics", autocomplete: "off", placeholder: t("Topic"), onchange: () => this.onRecipientChange(), oninput: () => this.showRecipient() });
    this.topics = h("datalist", { id: "compose-topics" });
    // The topic and people suggestions are only seen with their field in use: filled then.
    this.topic.addEventListener("focus", () => this.refreshTopics());
    this.topic.addEventListener("input", () => this.refreshTopics());
    this.to = h("input", { id: "compose-to", type: "text", list: "compose-people", autocomplete: "off", placeholder: t("Names or emails, separated by commas"), oninput: () => this.showRecipient() });
    this.people = h("datalist", { id: "compose-people" });
    this.to.addEventListener("focus", () => this.fillPeople());
    this.to.addEventListener("input", () => this.fillPeople());
    this.streamFields = h("div", { class: "compose-fields" },
      h("label", { for: "compose-channel", class: "field-label", text: t("Channel") }), this.channel,
      h("label", { for: "compose-topic", class: "field-label", text: t("Topic") }), this.topic, this.topics);
    this.dmFields = h("div", { class: "compose-fields", hidden: true },
      h("label", { for: "compose-to", class: "field-label", text: t("To") }), this.to, this.people);
    this.modeButton = h("button", { type: "button", class: "link-button", onclick: () => this.setMode(this.mode === "stream" ? "dm" : "stream") });
    this.content = h("textarea", { id: "compose-content", dir: "auto", rows: 2, placeholder: t("Message (Enter to send, Shift+Enter for a new line)"), "aria-describedby": "compose-hint" });
    this.autocomplete = new Autocomplete(this.app, this.content);
    this.file = h("input", { type: "file", id: "compose-file", multiple: true, class: "visually-hidden", tabindex: "-1", "aria-hidden": "true" });
    this.file.addEventListener("change", () => {
      this.uploadFiles([...this.file.files]);
      this.file.value = "";
    });
    this.draftsButton = h("button", { type: "button", class: "link-button", "aria-haspopup": "dialog", onclick: () => this.openDrafts() });
    this.form = h("form", { class: "compose-form", "aria-label": t("Compose a message") },
      h("div", { class: "compose-recipient" }, this.streamFields, this.dmFields, this.modeButton),
      toolbar(this),
      h("div", { class: "compose-body" }, this.autocomplete.box,
        h("label", { for: "compose-content", class: "visually-hidden", text: t("Message") }), this.content,
        this.preview = h("div", { class: "compose-preview rendered", hidden: true, "aria-live": "polite", "aria-label": t("Preview") })),
      h("div", { class: "compose-actions" },
        this.file,
        h("button", { type: "button", class: "attach-button", title: t("Attach files (or drop or paste them)"), text: t("Attach files"), onclick: () => this.file.click() }),
        this.draftsButton,
        h("span", { id: "compose-hint", class: "hint", text: t("Enter sends · Shift+Enter new line") }),
        this.scheduledButton = h("button", { type: "button", class: "link-button", hidden: true, "aria-haspopup": "dialog", onclick: () => import("./compose_extra.js").then((m) => m.openScheduled(this)) }),
        this.sendButton = h("button", { type: "submit", class: "primary", text: t("Send") }),
        h("button", { type: "button", class: "send-later", "aria-label": t("Send later…"), title: t("Send later…"), "aria-haspopup": "dialog", text: t("Later"),
          onclick: () => import("./compose_extra.js").then((m) => m.openSchedule(this)) })));
    // Sends on their way: the message shows once the server has it, so until then the
    // button says so (on a slow network the text leaves the box seconds before it appears).
    this.sending = 0;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    this.content.addEventListener("keydown", (event) => this.onKeydown(event));
    this.content.addEventListener("input", () => this.onInput());
    this.content.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData ? event.clipboardData.files : [])];
      if (files.length) {
        event.preventDefault();
        this.uploadFiles(files);
      }
    });
    this.root.addEventListener("dragover", (event) => {
      event.preventDefault();
      this.root.classList.add("dragging");
    });
    this.root.addEventListener("dragleave", () => this.root.classList.remove("dragging"));
    this.root.addEventListener("drop", (event) => {
      event.preventDefault();
      this.root.classList.remove("dragging");
      const files = [...(event.dataTransfer ? event.dataTransfer.files : [])];
      if (files.length) this.uploadFiles(files);
    });
    clear(this.root).append(this.form);
    this.setMode("stream");
  }

  // Fills the channel and people choices from the state (after register and on changes).
  refreshChoices() {
    this.refreshChannels();
    this.refreshPeople();
    this.refreshDrafts();
  }

  // The channel picker, rebuilt only when the channels or their names or order changed (a
  // subscription's colour or muting changes nothing here).
  refreshChannels() {
    const subs = this.app.state.subs.sorted();
    const key = subs.map((sub) => `${sub.stream_id}:${sub.name}`).join("\n");
    if (key === this.channelsKey) return;
    this.channelsKey = key;
    const selected = Number(this.channel.value) || null;
    clear(this.channel).append(...subs.map((sub) => h("option", { value: sub.stream_id, text: isolateText(`#${sub.name}`), selected: sub.stream_id === selected })));
    this.refreshTopics();
    this.showRecipient();
  }

  // The people changed (or only their presence: that is not told apart here); the "To"
  // suggestions are rebuilt when next used, or now if the field is in use.
  refreshPeople() {
    this.peopleStale = true;
    if (document.activeElement === this.to) this.fillPeople();
  }

  // Suggestions for the DM "To" field (capped: a datalist of thousands helps nobody).
  fillPeople() {
    if (!this.peopleStale || !this.app.state.users.complete) return;
    this.peopleStale = false;
    const { state } = this.app;
    const options = [];
    for (const user of state.users.active()) {
      if (user.user_id !== state.myId && !user.is_bot) options.push(h("option", { value: user.email, text: user.full_name }));
      if (options.length >= 500) break;
    }
    clear(this.people).append(...options);
  }

  refreshDrafts() {
    this.draftsButton.textContent = t("Drafts ({n})", { n: this.app.state.drafts.size });
  }

  // The topic suggestions of the chosen channel: fetched from the server once per channel,
  // and drawn only while the topic field is in use (a narrow switch only changes the channel).
  refreshTopics() {
    const streamId = Number(this.channel.value);
    if (streamId) this.app.ensureTopics(streamId);
    if (document.activeElement !== this.topic) return;
    const names = streamId ? this.app.state.subs.topicsOf(streamId).slice(0, 30).map((t) => t.name) : [];
    const key = `${streamId}\n${names.join("\n")}`;
    if (key === this.topicsKey) return;
    this.topicsKey = key;
    clear(this.topics).append(...names.map((name) => h("option", { value: name })));
  }

  setMode(mode) {
    this.mode = mode;
    this.streamFields.hidden = mode !== "stream";
    this.dmFields.hidden = mode !== "dm";
    this.modeButton.textContent = mode === "stream" ? t("Direct message instead") : t("Channel message instead");
    this.showRecipient();
  }

  // The message box names where its message goes, as Zulip's does: on a phone the recipient
  // fields are out of sight until the box is used (app.css), so this is all that shows it.
  showRecipient() {
    const { state } = this.app;
    let text = t("Message (Enter to send, Shift+Enter for a new line)");
    if (this.mode === "stream" && Number(this.channel.value)) {
      const channel = isolateText(`#${state.subs.name(Number(this.channel.value))}`);
      const topic = this.topic.value.trim();
      text = topic ? t("Message {channel} > {topic}", { channel, topic: isolateText(topic) }) : t("Message {channel}", { channel });
    } else if (this.mode === "dm" && this.to.value.trim()) {
      const names = this.to.value.split(",").map((part) => part.trim()).filter(Boolean)
        .map((part) => state.users.find(part)?.full_name ?? part);
      text = t("Message {names}", { names: isolateText(names.join(", ")) });
    }
    this.content.placeholder = text;
  }

  // Opens compose for a conversation: {streamId, topic} or {userIds}; focuses the right field.
  start(mode, { streamId, topic, userIds, content } = {}) {
    this.setMode(mode);
    if (mode === "stream") {
      if (streamId) this.channel.value = String(streamId);
      this.topic.value = topic ?? "";
      this.refreshTopics();
    } else {
      this.to.value = (userIds || []).filter((id) => id !== this.app.state.myId).map((id) => this.app.state.users.email(id)).join(", ");
    }
    if (content !== undefined) {
      this.content.value = content;
      this.onInput();
    }
    this.showRecipient();
    this.draftId = null;
    const focus = mode === "stream" ? (streamId && topic !== undefined && topic !== "" ? this.content : streamId ? this.topic : this.channel) : (userIds && userIds.length ? this.content : this.to);
    focus.focus();
    this.root.classList.add("open");
  }

  // A new narrow suggests its conversation as the compose target, unless one is being typed.
  followNarrow(terms) {
    if (this.content.value.trim()) return;
    const channel = terms.find((t) => t.operator === "channel" && !t.negated);
    const topic = terms.find((t) => t.operator === "topic" && !t.negated);
    const dm = terms.find((t) => t.operator === "dm" && !t.negated);
    if (channel && typeof channel.operand === "number" && this.app.state.subs.isSubscribed(channel.operand)) {
      this.setMode("stream");
      this.channel.value = String(channel.operand);
      this.topic.value = topic ? topic.operand : "";
      this.refreshTopics();
    } else if (dm && Array.isArray(dm.operand)) {
      this.setMode("dm");
      this.to.value = dm.operand.filter((id) => id !== this.app.state.myId).map((id) => this.app.state.users.email(id)).join(", ");
    }
    this.showRecipient();
  }

  recipientUserIds() {
    const ids = [];
    for (const part of this.to.value.split(",").map((p) => p.trim()).filter(Boolean)) {
      const user = this.app.state.users.find(part);
      if (!user) throw new Error(t("Unknown recipient: {recipient}", { recipient: part }));
      ids.push(user.user_id);
    }
    if (!ids.length) throw new Error(t("Add at least one recipient"));
    return ids;
  }

  // The request parameters for the current recipient (throws on an incomplete one).
  target() {
    if (this.mode === "stream") {
      const streamId = Number(this.channel.value);
      if (!streamId) throw new Error(t("Choose a channel"));
      return { type: "stream", to: streamId, topic: this.topic.value.trim() };
    }
    return { type: "direct", to: this.recipientUserIds() };
  }

  onKeydown(event) {
    if (this.autocomplete.onKeydown(event)) {
      event.preventDefault();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    } else if (event.key === "Escape") {
      event.preventDefault();
      this.content.blur();
      this.app.focusFeed();
    }
  }

  onInput() {
    this.scheduleDraftSave();
    this.noteTyping();
  }

  onRecipientChange() {
    this.refreshTopics();
    this.stopTyping();
    this.showRecipient();
  }

  async send() {
    const content = this.content.value;
    if (!content.trim()) return;
    let target;
    try {
      target = this.target();
    } catch (error) {
      // A recipient not named in any message yet is found once the user list is there.
      if (!this.app.state.users.complete) {
        await this.app.usersReady();
        return this.send();
      }
      toast(error.message, "error");
      return;
    }
    const draftId = this.draftId;
    this.showEditor();
    clearTimeout(this.draftTimer);
    this.stopTyping();
    this.content.value = "";
    this.draftId = null;
    this.noteSending(1);
    const localId = String(Math.random()).slice(2, 10);
    this.app.echo(target, content, localId);
    try {
      await this.app.api.post("/messages", { ...target, content, queue_id: this.app.state.queueId, local_id: localId });
      if (draftId) this.app.api.del(`/drafts/${draftId}`).catch(() => {});
      this.app.noteSent(target);
    } catch (error) {
      // Nothing is lost: the echo goes and the text goes back for another try.
      this.app.dropEcho(localId);
      if (!this.content.value) this.content.value = content;
      this.draftId = draftId;
      this.app.showError(error);
    } finally {
      this.noteSending(-1);
    }
  }

  // Back from the preview to the text.
  showEditor() {
    this.preview.hidden = true;
    this.content.hidden = false;
    this.previewButton.setAttribute("aria-pressed", "false");
    this.previewButton.textContent = t("Preview");
  }

  // The message box's recipient and text cleared after a send that did not go through send().
  clearContent() {
    this.showEditor();
    this.content.value = "";
    this.draftId = null;
    this.onInput();
  }

  noteSending(change) {
    this.sending += change;
    this.sendButton.textContent = this.sending ? t("Sending…") : t("Send");
    this.sendButton.setAttribute("aria-busy", String(this.sending > 0));
  }

  // ---- typing notifications -------------------------------------------------------------

  typingParams() {
    try {
      const t = this.target();
      return t.type === "stream" ? { type: "stream", stream_id: t.to, topic: t.topic } : { type: "direct", to: t.to };
    } catch {
      return null;
    }
  }

  noteTyping() {
    const setting = this.mode === "stream" ? "send_stream_typing_notifications" : "send_private_typing_notifications";
    if (!this.content.value.trim() || this.app.state.settings[setting] === false) return;
    const params = this.typingParams();
    if (!params) return;
    const now = Date.now();
    const key = JSON.stringify(params);
    if (key !== this.typingTarget || now - this.typingSentAt > TYPING_REPEAT_MS) {
      this.typingTarget = key;
      this.typingSentAt = now;
      this.app.api.post("/typing", { op: "start", ...params }).catch(() => {});
    }
    clearTimeout(this.typingStopTimer);
    this.typingStopTimer = setTimeout(() => this.stopTyping(), TYPING_STOP_MS);
  }

  stopTyping() {
    clearTimeout(this.typingStopTimer);
    if (!this.typingTarget) return;
    const params = JSON.parse(this.typingTarget);
    this.typingTarget = null;
    this.typingSentAt = 0;
    this.app.api.post("/typing", { op: "stop", ...params }).catch(() => {});
  }

  // ---- uploads --------------------------------------------------------------------------

  insertAtCaret(text) {
    const ta = this.content;
    const start = ta.selectionStart;
    ta.value = ta.value.slice(0, start) + text + ta.value.slice(ta.selectionEnd);
    ta.setSelectionRange(start + text.length, start + text.length);
  }

  async uploadFiles(files) {
    for (const file of files) {
      const placeholder = `[Uploading ${file.name}…]()`;
      this.insertAtCaret((this.content.value && !/\s$/.test(this.content.value) ? " " : "") + placeholder + " ");
      try {
        const result = await upload(file);
        this.content.value = this.content.value.replace(placeholder, `[${result.filename || file.name}](${result.url || result.uri})`);
      } catch (error) {
        this.content.value = this.content.value.replace(placeholder, "");
        this.app.showError(error);
      }
      this.onInput();
    }
    this.content.focus();
  }

  // ---- drafts ---------------------------------------------------------------------------

  draftPayload() {
    let target;
    try {
      target = this.target();
    } catch {
      target = { type: this.mode === "stream" ? "stream" : "direct", to: [] };
    }
    const to = target.type === "stream" ? (target.to ? [target.to] : []) : target.to;
    return { type: target.type === "stream" ? "stream" : "private", to, topic: target.topic || "", content: this.content.value, timestamp: Math.floor(Date.now() / 1000) };
  }

  scheduleDraftSave() {
    clearTimeout(this.draftTimer);
    if (this.app.state.settings.enable_drafts_synchronization === false) return;
    this.draftTimer = setTimeout(() => this.saveDraft(), DRAFT_SAVE_MS);
  }

  async saveDraft() {
    const draft = this.draftPayload();
    try {
      if (!draft.content.trim()) {
        if (this.draftId) await this.app.api.del(`/drafts/${this.draftId}`);
        this.draftId = null;
      } else if (this.draftId) {
        await this.app.api.patch(`/drafts/${this.draftId}`, { draft });
      } else {
        const result = await this.app.api.post("/drafts", { drafts: [draft] });
        this.draftId = result.ids[0];
      }
    } catch {
      // A draft that failed to save stays in the box; the next keystroke retries.
      this.draftId = null;
    }
  }

  openDrafts() {
    const { state } = this.app;
    const close = () => dialog.remove();
    const items = [...state.drafts.values()].sort((a, b) => b.timestamp - a.timestamp);
    const list = h("ul", { class: "drafts-list" });
    for (const d of items) {
      const where = d.type === "stream" ? [channelRef(state.subs.name(d.to[0])), " > ", h("bdi", { text: d.topic })] : d.to.map((id) => state.users.name(id)).join(", ") || t("(no recipient)");
      list.append(h("li", {},
        h("button", { type: "button", class: "draft-restore", onclick: () => {
          close();
          if (d.type === "stream") this.start("stream", { streamId: d.to[0], topic: d.topic, content: d.content });
          else this.start("dm", { userIds: dmKeyIds(d.to, state.myId), content: d.content });
          this.draftId = d.id;
        } }, h("strong", {}, where), h("span", { text: d.content.slice(0, 80) })),
        h("button", { type: "button", class: "icon-button", "aria-label": t("Delete draft"), text: "🗑", onclick: () => this.app.api.del(`/drafts/${d.id}`).then(close).catch((e) => this.app.showError(e)) })));
    }
    if (!items.length) list.append(h("li", { class: "side-empty", text: t("No drafts") }));
    const dialog = h("div", { class: "popover drafts", role: "dialog", "aria-label": t("Drafts") }, h("h2", { text: t("Drafts") }), list,
      h("button", { type: "button", text: t("Close"), onclick: close }));
    dialog.addEventListener("keydown", (event) => event.key === "Escape" && close());
    document.body.append(dialog);
    placeNear(dialog, this.draftsButton);
    const first = dialog.querySelector("button");
    if (first) first.focus();
  }
}
