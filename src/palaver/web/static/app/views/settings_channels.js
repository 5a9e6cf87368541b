// The channel browser: find, subscribe to and leave channels, and create new ones.

import { narrowToHash } from "../narrow.js";
import { h, clear, isolateText } from "./dom.js";
import { field, submit } from "./settings.js";
import { t } from "../i18n.js";

export function renderChannels(app, panel) {
  const filter = h("input", { type: "search", placeholder: t("Find channels") });
  const table = h("table", { class: "settings-table" });
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const body = h("tbody");
    for (const stream of app.state.subs.allStreams()) {
      if (q && !stream.name.toLowerCase().includes(q)) continue;
      const subscribed = app.state.subs.isSubscribed(stream.stream_id);
      const toggle = h("button", {
        type: "button", class: subscribed ? "" : "primary", text: subscribed ? t("Unsubscribe") : t("Subscribe"),
        "aria-label": subscribed ? t("Unsubscribe from {channel}", { channel: stream.name }) : t("Subscribe to {channel}", { channel: stream.name }),
        onclick: async () => {
          const call = subscribed
            ? () => app.api.del("/users/me/subscriptions", { subscriptions: [stream.name] })
            : () => app.api.post("/users/me/subscriptions", { subscriptions: [{ name: stream.name }] });
          await submit(app, call, subscribed ? t("Left {channel}", { channel: isolateText(`#${stream.name}`) }) : t("Subscribed to {channel}", { channel: isolateText(`#${stream.name}`) }));
          // The subscription event redraws the sidebar; the browser redraws itself shortly after.
          setTimeout(draw, 300);
        },
      });
      body.append(h("tr", {},
        h("td", {}, h("a", { href: narrowToHash([{ operator: "channel", operand: stream.stream_id }], app.lookup), text: (stream.invite_only ? "🔒 " : "#") + stream.name })),
        h("td", { text: stream.description || "" }),
        h("td", {}, toggle)));
    }
    clear(table).append(h("thead", {}, h("tr", {}, h("th", { scope: "col", text: t("Channel") }), h("th", { scope: "col", text: t("Description") }), h("th", { scope: "col", text: "" }))), body);
  };
  filter.addEventListener("input", draw);
  draw();

  const name = h("input", { type: "text", required: true, maxlength: app.state.realm.max_stream_name_length || 60 });
  const description = h("input", { type: "text", maxlength: app.state.realm.max_stream_description_length || 1024 });
  const privacy = h("select", {},
    h("option", { value: "public", text: t("Public: anyone in the organization can join") }),
    h("option", { value: "private-shared", text: t("Private, new subscribers see the history") }),
    h("option", { value: "private", text: t("Private, new subscribers see only new messages") }));
  const admins = app.state.groups.find((g) => g.name === "role:administrators");
  const posting = h("select", {},
    h("option", { value: "", text: t("Everyone who can see it") }),
    admins ? h("option", { value: String(admins.id), text: t("Administrators only") }) : null);
  const announce = h("input", { type: "checkbox", id: "new-channel-announce" });
  const form = h("form", {},
    ...field("new-channel-name", t("Name"), name),
    ...field("new-channel-description", t("Description"), description),
    ...field("new-channel-privacy", t("Who can access it"), privacy),
    ...field("new-channel-posting", t("Who can post"), posting),
    h("div", { class: "row" }, announce, h("label", { for: "new-channel-announce", text: t("Announce the new channel") })),
    h("button", { type: "submit", class: "primary", text: t("Create channel") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const inviteOnly = privacy.value !== "public";
    const created = await submit(app, () => app.api.post("/channels/create", {
      name: name.value.trim(),
      description: description.value.trim(),
      subscribers: [app.state.myId],
      invite_only: inviteOnly,
      history_public_to_subscribers: privacy.value !== "private",
      announce: announce.checked,
      can_send_message_group: posting.value ? Number(posting.value) : undefined,
    }), t("Created {channel}", { channel: isolateText(`#${name.value.trim()}`) }));
    if (created) {
      form.reset();
      setTimeout(draw, 300);
    }
  });
  panel.append(h("h2", { text: t("Channels") }), h("label", { for: "channel-filter", class: "visually-hidden", text: t("Find channels") }), filter, table, h("h3", { text: t("Create a channel") }), form);
  filter.id = "channel-filter";
}
