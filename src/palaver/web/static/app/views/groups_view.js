// The user groups, browsed from the left sidebar (or a click on a group mention): the
// same browser as Settings → User groups, in a dialog of its own. It follows user_group
// events while open (main.js redraws every .live-panel).

import { t } from "../i18n.js";
import { h, trapFocus } from "./dom.js";
import { renderGroups } from "./settings_groups.js";

export function openGroups(app, groupId = null) {
  document.getElementById("groups-overlay")?.remove();
  const returnTo = document.activeElement;
  const close = () => {
    overlay.remove();
    if (returnTo && returnTo.isConnected) returnTo.focus();
    else app.focusFeed();
  };
  const body = h("div", { class: "settings-panel live-panel" });
  const dialog = h("div", { class: "dialog groups-dialog", role: "dialog", "aria-modal": "true", "aria-label": t("User groups") },
    h("button", { type: "button", class: "close-groups", text: t("Close"), onclick: close }), body);
  const overlay = h("div", { class: "overlay", id: "groups-overlay" }, dialog);
  overlay.addEventListener("mousedown", (event) => event.target === overlay && close());
  dialog.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
    }
  });
  trapFocus(dialog);
  document.body.append(overlay);
  renderGroups(app, body, { selected: groupId, onClose: close });
  (body.querySelector(".group-choice.selected") || dialog.querySelector(".close-groups")).focus();
}
