// User groups: browse the organization's groups and their members, create one (those in
// can_create_groups), and, for those who may manage a group, rename it, change its
// description, add and remove members, deactivate it. The state's realm_user_groups,
// kept current by user_group events; the server checks every change again.

import { t, tn } from "../i18n.js";
import { avatar, clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { holds, isAdmin, readOnlyNote } from "./settings_kit.js";

function canManage(app, group) {
  return isAdmin(app) || holds(app, app.state.realm.realm_can_manage_all_groups) || holds(app, group.can_manage_group);
}

function canAdd(app, group) {
  return canManage(app, group) || holds(app, group.can_add_members_group);
}

function canRemove(app, group) {
  return canManage(app, group) || holds(app, group.can_remove_members_group);
}

function visibleGroups(app) {
  return app.state.groups.filter((g) => !g.is_system_group && !g.deactivated).sort((a, b) => a.name.localeCompare(b.name));
}

// The narrow of the messages that mention the group: its mention syntax as a phrase.
export function mentionsNarrow(group) {
  return [{ operator: "search", operand: `"@*${group.name}*"`, negated: false }];
}

function peopleDatalist(app, id, exclude) {
  return h("datalist", { id }, app.state.users.active().filter((u) => !u.is_bot && !exclude.has(u.user_id))
    .map((u) => h("option", { value: u.email, label: u.full_name })));
}

function detail(app, group, { onClose }) {
  const manage = canManage(app, group);
  const members = [...(group.members || [])].map((id) => app.state.users.get(id)).filter(Boolean)
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
  const box = h("section", { class: "group-detail", "aria-label": t("Group {name}", { name: group.name }), dataset: { groupId: String(group.id) } });
  const heading = h("h3", { text: group.name });
  box.append(heading);
  if (manage) {
    const name = h("input", { type: "text", value: group.name, required: true, maxlength: 100 });
    const description = h("textarea", { rows: 2, value: group.description || "" });
    const form = h("form", { class: "group-edit" }, ...field(`group-name-${group.id}`, t("Group name"), name),
      ...field(`group-description-${group.id}`, t("Description"), description),
      h("button", { type: "submit", class: "primary", text: t("Save group") }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const changes = {};
      if (name.value.trim() !== group.name) changes.name = name.value.trim();
      if (description.value !== (group.description || "")) changes.description = description.value;
      if (Object.keys(changes).length) submit(app, () => app.api.patch(`/user_groups/${group.id}`, changes));
    });
    box.append(form);
  } else if (group.description) {
    box.append(h("p", { class: "group-description", text: group.description }));
  }
  box.append(h("p", {}, h("a", { href: "#", class: "group-mentions", text: t("View messages mentioning @{name}", { name: group.name }), onclick: (event) => {
    event.preventDefault();
    onClose();
    app.narrow(mentionsNarrow(group));
  } })));
  const remove = canRemove(app, group);
  const list = h("ul", { class: "group-members", "aria-label": t("Members") });
  for (const user of members) {
    list.append(h("li", {}, avatar(user), h("span", { text: user.full_name }), h("span", { class: "hint", text: user.email }),
      remove ? h("button", { type: "button", class: "link-button", text: t("Remove"), "aria-label": t("Remove {name} from {group}", { name: user.full_name, group: group.name }),
        onclick: () => submit(app, () => app.api.post(`/user_groups/${group.id}/members`, { delete: [user.user_id] }), t("Member removed")) }) : null));
  }
  if (!members.length) list.append(h("li", { class: "side-empty", text: t("No members.") }));
  const subgroups = (group.direct_subgroup_ids || []).map((id) => app.state.groups.find((g) => g.id === id)).filter(Boolean);
  box.append(h("h4", { text: tn("{n} member", "{n} members", members.length) }), list);
  if (subgroups.length) box.append(h("p", { class: "hint", text: t("Also everyone in: {groups}", { groups: subgroups.map((g) => g.name).join(", ") }) }));
  if (canAdd(app, group)) {
    const who = h("input", { type: "text", list: `group-people-${group.id}`, required: true, placeholder: "ann@example.com" });
    const add = h("form", { class: "group-add" }, ...field(`group-add-${group.id}`, t("Add a member (email or full name)"), who),
      peopleDatalist(app, `group-people-${group.id}`, new Set(group.members || [])), h("button", { type: "submit", text: t("Add") }));
    add.addEventListener("submit", async (event) => {
      event.preventDefault();
      const user = app.state.users.find(who.value);
      if (!user) {
        app.showError(t("No one named {who}", { who: who.value }));
        return;
      }
      if (await submit(app, () => app.api.post(`/user_groups/${group.id}/members`, { add: [user.user_id] }), t("Member added"))) who.value = "";
    });
    box.append(add);
  }
  if (manage) {
    box.append(h("button", { type: "button", class: "danger", text: t("Deactivate group"), onclick: async () => {
      if (!window.confirm(t("Deactivate the group {name}?", { name: group.name }))) return;
      await submit(app, () => app.api.post(`/user_groups/${group.id}/deactivate`), t("Group deactivated"));
    } }));
  }
  return box;
}

function createForm(app, onCreated) {
  const name = h("input", { type: "text", required: true, maxlength: 100 });
  const description = h("input", { type: "text", maxlength: 1024 });
  const form = h("form", { class: "group-create" }, ...field("group-create-name", t("Group name"), name),
    ...field("group-create-description", t("Description"), description),
    h("button", { type: "submit", class: "primary", text: t("Create group") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const made = await submit(app, () => app.api.post("/user_groups/create", { name: name.value.trim(), description: description.value, members: [app.state.myId] }), t("Group created"));
    if (made) {
      form.reset();
      onCreated(made.group_id);
    }
  });
  return form;
}

// The groups browser, in the settings panel or the overlay the left sidebar opens.
export function renderGroups(app, panel, { selected = null, onClose = () => {} } = {}) {
  let selectedId = selected;
  const list = h("ul", { class: "group-list", role: "list" });
  const pane = h("div", { class: "group-pane" });
  const draw = () => {
    const groups = visibleGroups(app);
    if (!groups.some((g) => g.id === selectedId)) selectedId = groups.length ? groups[0].id : null;
    clear(list);
    for (const group of groups) {
      list.append(h("li", {}, h("button", { type: "button", class: group.id === selectedId ? "group-choice selected" : "group-choice", "aria-pressed": String(group.id === selectedId),
        onclick: () => {
          selectedId = group.id;
          draw();
        } }, h("span", { text: group.name }), h("span", { class: "hint", text: tn("{n} member", "{n} members", (group.members || []).length) }))));
    }
    if (!groups.length) list.append(h("li", { class: "side-empty", text: t("No user groups yet.") }));
    const group = groups.find((g) => g.id === selectedId);
    clear(pane).append(group ? detail(app, group, { onClose }) : "");
  };
  const create = holds(app, app.state.realm.realm_can_create_groups)
    ? createForm(app, (id) => {
      selectedId = id;
      draw();
    })
    : readOnlyNote(t("The organization does not let you create user groups."));
  panel.append(h("h2", { text: t("User groups") }), h("div", { class: "groups-browser" }, list, pane), h("h3", { text: t("Create a group") }), create);
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["groups", "users"];
}

export function render(app, panel) {
  renderGroups(app, panel, { onClose: () => document.querySelector("#settings-overlay .close-settings")?.click() });
}
