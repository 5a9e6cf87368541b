// Settings: default channels, the ones new members join, and default channel groups, the
// named sets of channels offered to new members to choose from. Members see them;
// administrators add, remove, rename and describe. Kept current by default_streams and
// default_stream_groups events (each carries the whole list).

import { t } from "../i18n.js";
import { channelRef, clear, h, isolateText } from "./dom.js";
import { field, submit } from "./settings.js";
import { isAdmin, keepFocus, readOnlyNote } from "./settings_kit.js";

function channelName(app, id) {
  return app.state.subs.name(id);
}

// Channels that may join a group: known ones that are not default channels (a default
// channel is everyone's already) and not in the group yet.
function channelOptions(app, exclude) {
  const defaults = new Set(app.state.realm.realm_default_streams || []);
  return app.state.subs.allStreams().filter((sub) => !defaults.has(sub.stream_id) && !exclude.has(sub.stream_id))
    .sort((a, b) => a.name.localeCompare(b.name));
}

function groupCard(app, group, admin) {
  const ids = new Set(group.streams || []);
  const channels = [...ids].map((id) => ({ id, name: channelName(app, id) })).sort((a, b) => a.name.localeCompare(b.name));
  const card = h("section", { class: "default-group", "aria-label": t("Default channel group {name}", { name: group.name }), dataset: { groupId: String(group.id) } },
    h("h4", { text: group.name }));
  if (group.description) card.append(h("p", { class: "hint default-group-description", text: group.description }));
  const list = h("ul", { class: "default-channel-list", "aria-label": t("Channels") });
  for (const channel of channels) {
    list.append(h("li", { class: "default-channel-row" }, channelRef(channel.name),
      admin ? h("button", { type: "button", class: "danger", text: t("Remove"), "aria-label": t("Remove #{channel} from {group}", { channel: channel.name, group: group.name }),
        onclick: () => submit(app, () => app.api.patch(`/default_stream_groups/${group.id}/streams`, { op: "remove", stream_names: [channel.name] }), t("Channel removed")) }) : null));
  }
  if (!channels.length) list.append(h("li", { class: "side-empty", text: t("No channels.") }));
  card.append(list);
  if (!admin) return card;
  const offered = channelOptions(app, ids);
  if (offered.length) {
    const choice = h("select", { required: true }, h("option", { value: "", text: t("Choose a channel") }),
      offered.map((sub) => h("option", { value: sub.name, text: isolateText(`#${sub.name}`) })));
    const add = h("form", {}, ...field(`default-group-add-${group.id}`, t("Add a channel to {group}", { group: group.name }), choice),
      h("button", { type: "submit", text: t("Add") }));
    add.addEventListener("submit", (event) => {
      event.preventDefault();
      if (choice.value) submit(app, () => app.api.patch(`/default_stream_groups/${group.id}/streams`, { op: "add", stream_names: [choice.value] }), t("Channel added"));
    });
    card.append(add);
  }
  const name = h("input", { type: "text", value: group.name, required: true, maxlength: 60 });
  const description = h("input", { type: "text", value: group.description || "", maxlength: 1024 });
  const edit = h("form", {}, ...field(`default-group-name-${group.id}`, t("Group name"), name),
    ...field(`default-group-description-${group.id}`, t("Description"), description),
    h("div", { class: "row" },
      h("button", { type: "submit", class: "primary", text: t("Save group") }),
      h("button", { type: "button", class: "danger", text: t("Delete group"), "aria-label": t("Delete the default channel group {name}", { name: group.name }), onclick: async () => {
        if (!window.confirm(t("Delete the default channel group {name}?", { name: group.name }))) return;
        await submit(app, () => app.api.del(`/default_stream_groups/${group.id}`), t("Group deleted"));
      } })));
  edit.addEventListener("submit", (event) => {
    event.preventDefault();
    const changes = {};
    if (name.value.trim() !== group.name) changes.new_group_name = name.value.trim();
    if (description.value !== (group.description || "")) changes.new_description = description.value;
    if (Object.keys(changes).length) submit(app, () => app.api.patch(`/default_stream_groups/${group.id}`, changes));
  });
  card.append(edit);
  return card;
}

function createGroupForm(app) {
  const name = h("input", { type: "text", required: true, maxlength: 60 });
  const description = h("input", { type: "text", maxlength: 1024 });
  const channels = h("fieldset", { class: "channel-choices" }, h("legend", { text: t("Channels in the group") }));
  const drawChoices = () => {
    const chosen = new Set([...channels.querySelectorAll("input:checked")].map((input) => input.value));
    channels.querySelectorAll("label").forEach((label) => label.remove());
    for (const sub of channelOptions(app, new Set())) {
      const id = `default-group-new-${sub.stream_id}`;
      channels.append(h("label", { class: "check", for: id }, h("input", { type: "checkbox", id, value: sub.name, checked: chosen.has(sub.name) }), channelRef(sub.name)));
    }
  };
  drawChoices();
  const form = h("form", { class: "default-group-create" }, ...field("default-group-create-name", t("Group name"), name),
    ...field("default-group-create-description", t("Description"), description), channels,
    h("button", { type: "submit", class: "primary", text: t("Create group") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const names = [...channels.querySelectorAll("input:checked")].map((input) => input.value);
    const made = await submit(app, () => app.api.post("/default_stream_groups/create", { group_name: name.value.trim(), description: description.value, stream_names: names }), t("Group created"));
    if (made) form.reset();
  });
  form.drawChoices = drawChoices;
  return form;
}

export function render(app, panel) {
  const admin = isAdmin(app);
  const list = h("ul", { class: "default-channel-list" });
  const choice = h("select", { required: true });
  const groups = h("div", { class: "default-groups" });
  const create = admin ? createGroupForm(app) : null;
  const draw = () => keepFocus(panel, () => {
    const ids = new Set(app.state.realm.realm_default_streams || []);
    const channels = [...ids].map((id) => ({ id, name: app.state.subs.name(id) })).sort((a, b) => a.name.localeCompare(b.name));
    clear(list);
    for (const channel of channels) {
      list.append(h("li", { class: "default-channel-row" }, channelRef(channel.name),
        admin ? h("button", { type: "button", class: "danger", text: t("Remove"), "aria-label": t("Remove #{name} from the default channels", { name: channel.name }),
          onclick: () => submit(app, () => app.api.del("/default_streams", { stream_id: channel.id }), t("Default channel removed")) }) : null));
    }
    if (!channels.length) list.append(h("li", { class: "side-empty", text: t("No default channels.") }));
    // Offered: the channels one can see that are not default yet (private ones cannot be).
    clear(choice).append(h("option", { value: "", text: t("Choose a channel") }));
    for (const sub of app.state.subs.allStreams()) {
      if (!ids.has(sub.stream_id) && !sub.invite_only) choice.append(h("option", { value: String(sub.stream_id), text: isolateText(`#${sub.name}`) }));
    }
    const all = [...(app.state.realm.realm_default_stream_groups || [])].sort((a, b) => a.name.localeCompare(b.name));
    clear(groups).append(...all.map((group) => groupCard(app, group, admin)));
    if (!all.length) groups.append(h("p", { class: "side-empty", text: t("No default channel groups.") }));
    if (create) create.drawChoices();
  });
  panel.append(h("h2", { text: t("Default channels") }), h("p", { class: "hint", text: t("New members of the organization join these channels.") }), list);
  if (admin) {
    const form = h("form", {}, ...field("default-channel-choice", t("Add a default channel"), choice), h("button", { type: "submit", class: "primary", text: t("Add") }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (choice.value) submit(app, () => app.api.post("/default_streams", { stream_id: Number(choice.value) }), t("Default channel added"));
    });
    panel.append(form);
  } else {
    panel.append(readOnlyNote(t("Only administrators can change the default channels.")));
  }
  panel.append(h("h3", { text: t("Default channel groups") }),
    h("p", { class: "hint", text: t("New members can choose to join the channels of these groups.") }), groups);
  if (create) panel.append(h("h3", { text: t("Create a default channel group") }), create);
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["default_streams", "default_stream_groups", "subscriptions"];
}
