// Settings: linkifiers, the patterns the server turns into links in messages (in order:
// the first pattern that matches a piece of text wins). Everyone sees them; administrators
// add, edit, delete and reorder. Kept current by realm_linkifiers events.

import { t } from "../i18n.js";
import { clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { isAdmin, readOnlyNote } from "./settings_kit.js";

function editor(app, linkifier, onDone) {
  const pattern = h("input", { type: "text", required: true, value: linkifier ? linkifier.pattern : "", placeholder: "#(?P<issue_id>[0-9]+)", class: "mono" });
  const template = h("input", { type: "text", required: true, value: linkifier ? linkifier.url_template : "", placeholder: "https://github.com/acme/app/issues/{issue_id}", class: "mono" });
  const key = linkifier ? `linkifier-${linkifier.id}` : "linkifier-new";
  const form = h("form", { class: "linkifier-form" }, ...field(`${key}-pattern`, t("Pattern"), pattern), ...field(`${key}-url`, t("URL template"), template),
    h("button", { type: "submit", class: "primary", text: linkifier ? t("Save linkifier") : t("Add linkifier") }),
    linkifier ? h("button", { type: "button", text: t("Cancel"), onclick: onDone }) : null);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const params = { pattern: pattern.value.trim(), url_template: template.value.trim() };
    const done = await submit(app, () => (linkifier ? app.api.patch(`/realm/filters/${linkifier.id}`, params) : app.api.post("/realm/filters", params)),
      linkifier ? t("Linkifier saved") : t("Linkifier added"));
    if (done) {
      if (!linkifier) form.reset();
      onDone();
    }
  });
  return form;
}

export function render(app, panel) {
  const admin = isAdmin(app);
  const list = h("ol", { class: "linkifier-list" });
  let editing = null;
  const move = (ids, from, to) => {
    const order = [...ids];
    const [id] = order.splice(from, 1);
    order.splice(to, 0, id);
    submit(app, () => app.api.patch("/realm/linkifiers", { ordered_linkifier_ids: order }), t("Order saved"));
  };
  const draw = () => {
    const linkifiers = app.state.realm.realm_linkifiers || [];
    const ids = linkifiers.map((l) => l.id);
    clear(list);
    linkifiers.forEach((linkifier, at) => {
      if (editing === linkifier.id) {
        list.append(h("li", {}, editor(app, linkifier, () => {
          editing = null;
          draw();
        })));
        return;
      }
      list.append(h("li", { class: "linkifier-row", dataset: { linkifierId: String(linkifier.id) } },
        h("code", { class: "linkifier-pattern", text: linkifier.pattern }), h("span", { "aria-hidden": "true", text: " → " }),
        h("code", { class: "linkifier-url", text: linkifier.url_template }),
        admin ? h("span", { class: "row-actions" },
          h("button", { type: "button", class: "link-button", text: "↑", title: t("Move up"), "aria-label": t("Move {pattern} up", { pattern: linkifier.pattern }), disabled: at === 0, onclick: () => move(ids, at, at - 1) }),
          h("button", { type: "button", class: "link-button", text: "↓", title: t("Move down"), "aria-label": t("Move {pattern} down", { pattern: linkifier.pattern }), disabled: at === ids.length - 1, onclick: () => move(ids, at, at + 1) }),
          h("button", { type: "button", text: t("Edit"), "aria-label": t("Edit {pattern}", { pattern: linkifier.pattern }), onclick: () => {
            editing = linkifier.id;
            draw();
          } }),
          h("button", { type: "button", class: "danger", text: t("Delete"), "aria-label": t("Delete {pattern}", { pattern: linkifier.pattern }), onclick: () => {
            if (window.confirm(t("Delete the linkifier {pattern}?", { pattern: linkifier.pattern }))) submit(app, () => app.api.del(`/realm/filters/${linkifier.id}`), t("Linkifier deleted"));
          } })) : null));
    });
    if (!linkifiers.length) list.append(h("li", { class: "side-empty", text: t("No linkifiers yet.") }));
  };
  panel.append(h("h2", { text: t("Linkifiers") }),
    h("p", { class: "hint", text: t("Text in messages that matches a pattern becomes a link; the first matching pattern wins.") }), list);
  if (admin) panel.append(h("h3", { text: t("Add a linkifier") }), editor(app, null, () => {}));
  else panel.append(readOnlyNote(t("Only administrators can change linkifiers.")));
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["linkifiers"];
}
