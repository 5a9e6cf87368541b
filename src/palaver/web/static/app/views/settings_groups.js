// User groups: browse the organization's groups and their members, create one (those in
// can_create_groups), and, for those who may manage a group, rename it, change its
// description, add and remove members and subgroups, say who may manage, join, leave,
// mention it (its group settings), deactivate it. Those the group lets join or leave do
// so here. The state's realm_user_groups, kept current by user_group events; the server
// checks every change again.

import { t, tn } from "../i18n.js";
import { avatar, clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { groupName, groupSettingSelect, holds, isAdmin, keepFocus, readOnlyNote, setGroupSettingSelect } from "./settings_kit.js";

// A group's own settings (PATCH /user_groups/{id}), in the order Zulip shows them.
const GROUP_SETTINGS = () => [
  ["can_manage_group", t("Who can manage this group")],
  ["can_add_members_group", t("Who can add members to this group")],
  ["can_remove_members_group", t("Who can remove members from this group")],
  ["can_join_group", t("Who can join this group")],
  ["can_leave_group", t("Who can leave this group")],
  ["can_mention_group", t("Who can mention this group")],
];

function canManage(app, group) {
  return isAdmin(app) || holds(app, app.state.realm.realm_can_manage_all_groups) || holds(app, group.can_manage_group);
}

function canAdd(app, group) {
  return canManage(app, group) || holds(app, group.can_add_members_group);
}

function canRemove(app, group) {
  return canManage(app, group) || holds(app, group.can_remove_members_group);
}

// The groups that contain `group`, however deep: none of them may become its subgroup.
function supergroupIds(app, group) {
  const found = new Set([group.id]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const other of app.state.groups) {
      if (!found.has(other.id) && (other.direct_subgroup_ids || []).some((id) => found.has(id))) {
        found.add(other.id);
        grew = true;
      }
    }
  }
  return found;
}

function subgroupsSection(app, group) {
  const byId = new Map(app.state.groups.map((g) => [g.id, g]));
  const subgroups = (group.direct_subgroup_ids || []).map((id) => byId.get(id)).filter(Boolean)
    .sort((a, b) => groupName(a).localeCompare(groupName(b)));
  const remove = canRemove(app, group);
  const list = h("ul", { class: "group-subgroups", "aria-label": t("Subgroups") });
  for (const sub of subgroups) {
    list.append(h("li", {}, h("span", { class: "group-subgroup-name", text: groupName(sub) }),
      h("span", { class: "hint", text: tn("{n} member", "{n} members", (sub.members || []).length) }),
      remove ? h("button", { type: "button", class: "link-button", text: t("Remove"), "aria-label": t("Remove subgroup {name} from {group}", { name: groupName(sub), group: group.name }),
        onclick: () => submit(app, () => app.api.post(`/user_groups/${group.id}/subgroups`, { delete: [sub.id] }), t("Subgroup removed")) }) : null));
  }
  if (!subgroups.length) list.append(h("li", { class: "side-empty", text: t("No subgroups.") }));
  const box = h("div", { class: "group-subgroups-box" }, h("h4", { text: t("Subgroups") }),
    h("p", { class: "hint", text: t("Everyone in a subgroup is a member of this group too.") }), list);
  if (canAdd(app, group)) {
    const excluded = supergroupIds(app, group);
    const current = new Set(group.direct_subgroup_ids || []);
    const offered = app.state.groups.filter((g) => !g.deactivated && !excluded.has(g.id) && !current.has(g.id) && g.name !== "role:nobody" && g.name !== "role:internet")
      .sort((a, b) => Number(b.is_system_group) - Number(a.is_system_group) || groupName(a).localeCompare(groupName(b)));
    if (offered.length) {
      const choice = h("select", { required: true }, h("option", { value: "", text: t("Choose a group") }),
        offered.map((g) => h("option", { value: String(g.id), text: groupName(g) })));
      const form = h("form", { class: "group-add" }, ...field(`group-subgroup-${group.id}`, t("Add a subgroup"), choice), h("button", { type: "submit", text: t("Add subgroup") }));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (choice.value) submit(app, () => app.api.post(`/user_groups/${group.id}/subgroups`, { add: [Number(choice.value)] }), t("Subgroup added"));
      });
      box.append(form);
    }
  }
  return box;
}

// Who may do what with the group. Those who may not manage it read the choices.
function permissionsSection(app, group) {
  const manage = canManage(app, group);
  const box = h("div", { class: "group-permissions permission-section" }, h("h4", { text: t("Permissions") }));
  for (const [setting, label] of GROUP_SETTINGS()) {
    if (!(setting in group)) continue;
    const id = `group-${setting}-${group.id}`;
    const control = groupSettingSelect(app, id, group[setting], {
      disabled: !manage,
      onChange: async (value) => {
        const done = await submit(app, () => app.api.patch(`/user_groups/${group.id}`, { [setting]: { new: value, old: group[setting] } }));
        if (done === null) setGroupSettingSelect(control, group[setting]);
      },
    });
    box.append(h("div", { class: "field-row" }, h("label", { for: id, text: label }), control));
  }
  return box;
}

// Join or leave, for those the group's settings allow (managers add and remove anyone).
function membershipButton(app, group) {
  const me = app.state.myId;
  const member = (group.members || []).includes(me);
  if (!member && (holds(app, group.can_join_group) || canAdd(app, group))) {
    return h("button", { type: "button", class: "primary", text: t("Join group"), onclick: () => submit(app, () => app.api.post(`/user_groups/${group.id}/members`, { add: [me] }), t("You joined {name}", { name: group.name })) });
  }
  if (member && (holds(app, group.can_leave_group) || canRemove(app, group))) {
    return h("button", { type: "button", text: t("Leave group"), onclick: () => submit(app, () => app.api.post(`/user_groups/${group.id}/members`, { delete: [me] }), t("You left {name}", { name: group.name })) });
  }
  return null;
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
  const membership = membershipButton(app, group);
  if (membership) box.append(h("div", { class: "row" }, membership));
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
  box.append(h("h4", { text: tn("{n} member", "{n} members", members.length) }), list);
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
  box.append(subgroupsSection(app, group), permissionsSection(app, group));
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
  // A group just created, shown once its user_group event has arrived (the answer to the
  // creation may come first).
  let awaited = null;
  const list = h("ul", { class: "group-list", role: "list" });
  const pane = h("div", { class: "group-pane" });
  const draw = () => keepFocus(panel, () => {
    const groups = visibleGroups(app);
    if (awaited !== null && groups.some((g) => g.id === awaited)) {
      selectedId = awaited;
      awaited = null;
    }
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
  });
  const create = holds(app, app.state.realm.realm_can_create_groups)
    ? createForm(app, (id) => {
      awaited = id;
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
