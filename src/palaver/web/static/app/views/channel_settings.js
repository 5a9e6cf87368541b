// One channel's settings for those who may change it: name, description, privacy, the
// subscribers, archiving. Loaded on first use.

import { t } from "../i18n.js";
import { h, isolateText, toast } from "./dom.js";
import { dialog } from "./menus.js";

export async function openChannelSettings(app, streamId) {
  await app.usersReady();
  const stream = app.state.subs.get(streamId);
  if (!stream) return;
  const name = h("input", { type: "text", id: "cs-name", required: true, value: stream.name, maxlength: app.state.realm.max_stream_name_length || 60 });
  const description = h("textarea", { id: "cs-description", rows: 2, value: stream.description || "" });
  const privacy = h("select", { id: "cs-privacy" },
    h("option", { value: "public", text: t("Public: anyone in the organization can join"), selected: !stream.invite_only }),
    h("option", { value: "private-shared", text: t("Private, new subscribers see the history"), selected: stream.invite_only && stream.history_public_to_subscribers }),
    h("option", { value: "private", text: t("Private, new subscribers see only new messages"), selected: stream.invite_only && !stream.history_public_to_subscribers }));
  const members = h("ul", { class: "read-receipts", "aria-label": t("Subscribers") }, h("li", { text: t("Loading…") }));
  const archive = h("button", { type: "button", class: "danger", text: t("Archive channel"), onclick: async () => {
    if (!window.confirm(t("Archive {channel}? Nobody can post in it afterwards.", { channel: isolateText(`#${stream.name}`) }))) return;
    try {
      await app.api.del(`/streams/${streamId}`);
      toast(t("{channel} archived", { channel: isolateText(`#${stream.name}`) }));
      close();
    } catch (error) {
      app.showError(error);
    }
  } });
  const { close } = dialog(t("Settings of {channel}", { channel: isolateText(`#${stream.name}`) }), [
    h("label", { for: "cs-name", text: t("Name") }), name,
    h("label", { for: "cs-description", text: t("Description") }), description,
    h("label", { for: "cs-privacy", text: t("Who can access it") }), privacy,
    h("h3", { text: t("Subscribers") }), members,
    archive,
  ], {
    onSubmit: async () => {
      const params = {};
      if (name.value.trim() !== stream.name) params.new_name = name.value.trim();
      if (description.value !== (stream.description || "")) params.description = description.value;
      const isPrivate = privacy.value !== "public";
      const history = privacy.value !== "private";
      if (isPrivate !== Boolean(stream.invite_only)) params.is_private = isPrivate;
      if (history !== Boolean(stream.history_public_to_subscribers)) params.history_public_to_subscribers = history;
      if (!Object.keys(params).length) return true;
      try {
        await app.api.patch(`/streams/${streamId}`, params);
        toast(t("Saved"));
        return true;
      } catch (error) {
        app.showError(error);
        return false;
      }
    },
  });
  try {
    const ids = (await app.api.get(`/streams/${streamId}/members`)).subscribers || [];
    members.replaceChildren(...ids.map((id) => app.state.users.name(id)).sort((a, b) => a.localeCompare(b)).map((n) => h("li", { text: n })));
  } catch (error) {
    members.replaceChildren(h("li", { text: error.message }));
  }
}
