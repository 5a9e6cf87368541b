// Settings: code playgrounds, the sites a code block of a language opens in ("View in
// Rust playground"). Everyone sees them; administrators add and delete. Kept current by
// realm_playgrounds events.

import { t } from "../i18n.js";
import { clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { isAdmin, readOnlyNote } from "./settings_kit.js";

export function render(app, panel) {
  const admin = isAdmin(app);
  const list = h("ul", { class: "playground-list" });
  const draw = () => {
    const playgrounds = [...(app.state.realm.realm_playgrounds || [])].sort((a, b) => a.pygments_language.localeCompare(b.pygments_language) || a.name.localeCompare(b.name));
    clear(list);
    for (const playground of playgrounds) {
      list.append(h("li", { class: "playground-row" },
        h("strong", { text: playground.name }), h("span", { class: "hint", text: playground.pygments_language }),
        h("code", { text: playground.url_template }),
        admin ? h("button", { type: "button", class: "danger", text: t("Delete"), "aria-label": t("Delete {name}", { name: playground.name }), onclick: () => {
          if (window.confirm(t("Delete the playground {name}?", { name: playground.name }))) submit(app, () => app.api.del(`/realm/playgrounds/${playground.id}`), t("Playground deleted"));
        } }) : null));
    }
    if (!playgrounds.length) list.append(h("li", { class: "side-empty", text: t("No code playgrounds yet.") }));
  };
  panel.append(h("h2", { text: t("Code playgrounds") }),
    h("p", { class: "hint", text: t("A code block in one of these languages offers to open its code in the playground.") }), list);
  if (admin) {
    const language = h("input", { type: "text", required: true, placeholder: t("Rust"), maxlength: 40 });
    const name = h("input", { type: "text", required: true, placeholder: t("Rust playground"), maxlength: 60 });
    const template = h("input", { type: "text", required: true, class: "mono", placeholder: "https://play.rust-lang.org/?code={code}" });
    const form = h("form", { class: "playground-form" }, ...field("playground-language", t("Language"), language), ...field("playground-name", t("Name"), name),
      ...field("playground-url", t("URL template (with {code})"), template), h("button", { type: "submit", class: "primary", text: t("Add playground") }));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const done = await submit(app, () => app.api.post("/realm/playgrounds", { pygments_language: language.value.trim(), name: name.value.trim(), url_template: template.value.trim() }), t("Playground added"));
      if (done) form.reset();
    });
    panel.append(h("h3", { text: t("Add a playground") }), form);
  } else {
    panel.append(readOnlyNote(t("Only administrators can change code playgrounds.")));
  }
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["playgrounds"];
}
