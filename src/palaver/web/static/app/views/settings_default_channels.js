// Settings: default channels, the ones new members join. Members see them; administrators
// add and remove. Kept current by default_streams events.

import { t } from "../i18n.js";
import { clear, h } from "./dom.js";
import { field, submit } from "./settings.js";
import { isAdmin, readOnlyNote } from "./settings_kit.js";

export function render(app, panel) {
  const admin = isAdmin(app);
  const list = h("ul", { class: "default-channel-list" });
  const choice = h("select", { required: true });
  const draw = () => {
    const ids = new Set(app.state.realm.realm_default_streams || []);
    const channels = [...ids].map((id) => ({ id, name: app.state.subs.name(id) })).sort((a, b) => a.name.localeCompare(b.name));
    clear(list);
    for (const channel of channels) {
      list.append(h("li", { class: "default-channel-row" }, h("span", { text: `#${channel.name}` }),
        admin ? h("button", { type: "button", class: "danger", text: t("Remove"), "aria-label": t("Remove #{name} from the default channels", { name: channel.name }),
          onclick: () => submit(app, () => app.api.del("/default_streams", { stream_id: channel.id }), t("Default channel removed")) }) : null));
    }
    if (!channels.length) list.append(h("li", { class: "side-empty", text: t("No default channels.") }));
    // Offered: the channels one can see that are not default yet (private ones cannot be).
    clear(choice).append(h("option", { value: "", text: t("Choose a channel") }));
    for (const sub of app.state.subs.allStreams()) {
      if (!ids.has(sub.stream_id) && !sub.invite_only) choice.append(h("option", { value: String(sub.stream_id), text: `#${sub.name}` }));
    }
  };
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
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["default_streams", "subscriptions"];
}
