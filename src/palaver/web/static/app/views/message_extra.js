// A message's source, edit history and read receipts, shown in dialogs. Loaded on first use.

import { t } from "../i18n.js";
import { h, formatDateTime, setHtml } from "./dom.js";
import { dialog } from "./menus.js";

export async function viewSource(app, id) {
  try {
    const raw = await app.actions.rawContent(id);
    dialog(t("Message source"), h("pre", { class: "message-source", text: raw }));
  } catch (error) {
    app.showError(error);
  }
}

export async function editHistory(app, id) {
  let history;
  try {
    [history] = await Promise.all([app.api.get(`/messages/${id}/history`).then((data) => data.message_history || []), app.usersReady()]);
  } catch (error) {
    app.showError(error);
    return;
  }
  const list = h("ol", { class: "edit-history" });
  history.forEach((version, i) => {
    const who = version.user_id ? app.state.users.name(version.user_id) : "";
    const what = i === 0 ? t("Posted by {name}", { name: who }) : version.prev_topic !== undefined && version.prev_content === undefined ? t("Moved by {name}", { name: who }) : t("Edited by {name}", { name: who });
    list.append(h("li", {},
      h("div", { class: "history-head" }, h("strong", { text: what }), h("span", { text: formatDateTime(version.timestamp) })),
      version.prev_topic !== undefined ? h("p", { class: "history-topic", text: t("Topic: {old} → {new}", { old: version.prev_topic, new: version.topic }) }) : null,
      version.rendered_content ? setHtml(h("div", { class: "rendered history-content" }), version.rendered_content) : null));
  });
  dialog(t("Message edit history"), list);
}

export async function readReceipts(app, id) {
  let ids;
  try {
    [ids] = await Promise.all([app.api.get(`/messages/${id}/read_receipts`).then((data) => data.user_ids || []), app.usersReady()]);
  } catch (error) {
    app.showError(error);
    return;
  }
  const names = ids.map((uid) => app.state.users.name(uid)).sort((a, b) => a.localeCompare(b));
  dialog(t("Read receipts"), [
    h("p", { text: names.length === 1 ? t("This message has been read by 1 person:") : t("This message has been read by {n} people:", { n: names.length }) }),
    h("ul", { class: "read-receipts" }, names.map((name) => h("li", { text: name })))]);
}
