// /poll and /todo widgets, built from a message's submessages (the first holds the widget's
// type and initial data; later ones are votes, new options, new tasks and strikes, in the
// shapes Zulip's clients send) and acted on through POST /submessage.

import { t, tn } from "../i18n.js";
import { h } from "./dom.js";

function parse(content) {
  try {
    return JSON.parse(content);
  } catch {
    return null;
  }
}

// {type: "poll"|"todo", ...state} or null when the message carries no widget.
export function widgetState(message) {
  const subs = message.submessages || [];
  if (!subs.length) return null;
  const first = parse(subs[0].content);
  if (!first || (first.widget_type !== "poll" && first.widget_type !== "todo")) return null;
  const extra = first.extra_data || {};
  const author = subs[0].sender_id;
  if (first.widget_type === "poll") {
    const poll = { type: "poll", author, question: extra.question || "", options: new Map() };
    (extra.options || []).forEach((option, i) => poll.options.set(`canned,${i}`, { option, votes: new Set() }));
    for (const sub of subs.slice(1)) {
      const data = parse(sub.content);
      if (!data) continue;
      if (data.type === "new_option" && typeof data.option === "string") {
        const key = `${sub.sender_id},${data.idx}`;
        if (!poll.options.has(key)) poll.options.set(key, { option: data.option, votes: new Set(), by: sub.sender_id, idx: data.idx });
      } else if (data.type === "vote" && poll.options.has(data.key)) {
        const votes = poll.options.get(data.key).votes;
        if (data.vote === 1) votes.add(sub.sender_id);
        else votes.delete(sub.sender_id);
      } else if (data.type === "question" && sub.sender_id === author && typeof data.question === "string") {
        poll.question = data.question;
      }
    }
    return poll;
  }
  const todo = { type: "todo", author, title: extra.task_list_title || "", tasks: new Map() };
  (extra.tasks || []).forEach((task, i) => todo.tasks.set(`${i},canned`, { task: task.task, desc: task.desc || "", completed: false }));
  for (const sub of subs.slice(1)) {
    const data = parse(sub.content);
    if (!data) continue;
    if (data.type === "new_task" && typeof data.task === "string") {
      const key = `${data.key},${sub.sender_id}`;
      if (!todo.tasks.has(key)) todo.tasks.set(key, { task: data.task, desc: data.desc || "", completed: Boolean(data.completed), by: sub.sender_id, idx: data.key });
    } else if (data.type === "strike" && todo.tasks.has(data.key)) {
      const task = todo.tasks.get(data.key);
      task.completed = !task.completed;
    } else if (data.type === "new_task_list_title" && sub.sender_id === author && typeof data.title === "string") {
      todo.title = data.title;
    }
  }
  return todo;
}

function send(app, messageId, data) {
  return app.api.post("/submessage", { message_id: messageId, msg_type: "widget", content: JSON.stringify(data) }).catch((error) => app.showError(error));
}

// The next index for an option or task I add: above every one I added before.
function nextIndex(items, myId) {
  let max = 0;
  for (const item of items.values()) if (item.by === myId && Number(item.idx) > max) max = Number(item.idx);
  return max + 1;
}

export function widgetElement(app, message, widget) {
  const myId = app.state.myId;
  const name = (id) => (id === myId ? t("You") : app.state.users.name(id));
  if (widget.type === "poll") {
    const list = h("ul", { class: "poll-options" });
    for (const [key, option] of widget.options) {
      const mine = option.votes.has(myId);
      const voters = [...option.votes].map(name).join(", ");
      list.append(h("li", {},
        h("button", { type: "button", class: "poll-vote" + (mine ? " mine" : ""), "aria-pressed": String(mine),
          "aria-label": tn("{option}: {n} vote", "{option}: {n} votes", option.votes.size, { option: option.option }),
          onclick: () => send(app, message.id, { type: "vote", key, vote: mine ? -1 : 1 }) }, String(option.votes.size)),
        h("span", { class: "poll-option", dir: "auto", text: option.option }),
        voters ? h("span", { class: "poll-voters", text: `(${voters})` }) : null));
    }
    const input = h("input", { type: "text", class: "poll-new", dir: "auto", placeholder: t("New option"), "aria-label": t("New option"), maxlength: 200 });
    const add = h("form", { class: "widget-add" }, input, h("button", { type: "submit", text: t("Add option") }));
    add.addEventListener("submit", (event) => {
      event.preventDefault();
      const option = input.value.trim();
      if (!option) return;
      input.value = "";
      send(app, message.id, { type: "new_option", idx: nextIndex(widget.options, myId), option });
    });
    return h("div", { class: "widget poll", role: "group", "aria-label": t("Poll: {question}", { question: widget.question }) },
      h("h4", { class: "widget-title", dir: "auto", text: widget.question || t("Poll") }),
      widget.options.size ? list : h("p", { class: "widget-empty", text: t("No options yet.") }), add);
  }
  const list = h("ul", { class: "todo-tasks" });
  for (const [key, task] of widget.tasks) {
    const id = `todo-${message.id}-${key.replace(/\W/g, "-")}`;
    list.append(h("li", { class: task.completed ? "done" : "" },
      h("input", { type: "checkbox", id, checked: task.completed, onchange: () => send(app, message.id, { type: "strike", key }) }),
      h("label", { for: id, dir: "auto" }, h("strong", { text: task.task }), task.desc ? `: ${task.desc}` : "")));
  }
  const input = h("input", { type: "text", class: "todo-new", dir: "auto", placeholder: t("New task"), "aria-label": t("New task"), maxlength: 200 });
  const add = h("form", { class: "widget-add" }, input, h("button", { type: "submit", text: t("Add task") }));
  add.addEventListener("submit", (event) => {
    event.preventDefault();
    const [task, ...rest] = input.value.split(":");
    if (!task.trim()) return;
    input.value = "";
    send(app, message.id, { type: "new_task", key: nextIndex(widget.tasks, myId), task: task.trim(), desc: rest.join(":").trim(), completed: false });
  });
  return h("div", { class: "widget todo", role: "group", "aria-label": t("To-do list: {title}", { title: widget.title || t("Task list") }) },
    h("h4", { class: "widget-title", dir: "auto", text: widget.title || t("Task list") }), list, add);
}
