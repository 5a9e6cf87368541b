// Settings: display and language. Each choice is saved as it is made (PATCH /settings)
// and applied by the user_settings event that follows, in this page and every other one
// the person has open: times and emoji redraw, message text takes the new size, and a new
// language reloads the page (its messages come with the page). The controls follow
// changes made elsewhere, except the one being edited.

import { t } from "../i18n.js";
import { h } from "./dom.js";
import { submit } from "./settings.js";

// The languages the server has catalogs of (the page's body[data-languages]), each named in
// itself; English, the source, is always there.
function languages() {
  const listed = (document.body.dataset.languages || "").split(" ").filter(Boolean);
  return ["en", ...listed.filter((code) => code !== "en")];
}
const FONT_SIZES = [12, 13, 14, 15, 16, 17, 18, 20, 22];
const LINE_HEIGHTS = [100, 115, 125, 140, 150, 165, 180];

function autonym(code) {
  try {
    const name = new Intl.DisplayNames([code], { type: "language" }).of(code);
    return name.charAt(0).toLocaleUpperCase(code) + name.slice(1);
  } catch {
    return code;
  }
}

function timeZones() {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return [];
  }
}

function options(values, current, label = String) {
  const list = [...values];
  if (current !== undefined && current !== null && !list.includes(current)) list.push(current);
  return list.map((value) => h("option", { value: String(value), text: label(value) }));
}

export function render(app, panel) {
  const settings = () => app.state.settings;
  const controls = [];
  const row = (key, label, control, parse = (value) => value) => {
    const id = `display-${key}`;
    control.id = id;
    const set = () => { control.value = String(settings()[key] ?? ""); };
    set();
    control.addEventListener("change", async () => {
      const done = await submit(app, () => app.api.patch("/settings", { [key]: parse(control.value) }));
      if (done === null) set();
    });
    controls.push([control, set]);
    return h("div", { class: "field-row" }, h("label", { for: id, text: label }), control);
  };
  const s = settings();
  const sounds = s.available_notification_sounds || [];
  const play = h("button", { type: "button", text: t("Play sound"), onclick: () => {
    const name = settings().notification_sound;
    if (name && name !== "none") import("./sounds.js").then((m) => m.play(name));
  } });
  panel.append(
    h("h2", { text: t("Display & language") }),
    h("section", { class: "permission-section" },
      h("h3", { text: t("Language and time") }),
      row("default_language", t("Language of the interface"), h("select", {}, options(languages(), s.default_language, autonym))),
      row("timezone", t("Time zone (shown to others with your local time)"), h("select", {},
        h("option", { value: "", text: t("Not set") }), options(timeZones(), s.timezone || undefined))),
      row("twenty_four_hour_time", t("Time format"), h("select", {},
        h("option", { value: "false", text: t("12-hour clock (5:00 PM)") }), h("option", { value: "true", text: t("24-hour clock (17:00)") })), (value) => value === "true")),
    h("section", { class: "permission-section" },
      h("h3", { text: t("Messages") }),
      row("web_font_size_px", t("Message text size (pixels)"), h("select", {}, options(FONT_SIZES, s.web_font_size_px)), Number),
      row("web_line_height_percent", t("Line spacing (percent)"), h("select", {}, options(LINE_HEIGHTS, s.web_line_height_percent)), Number),
      row("emojiset", t("Emoji style"), h("select", {}, (s.emojiset_choices || []).map((c) => h("option", { value: c.key, text: c.key === "text" ? t("Plain text") : c.text }))))),
    h("section", { class: "permission-section" },
      h("h3", { text: t("Sounds") }),
      row("notification_sound", t("Sound for direct messages and mentions"), h("select", {},
        h("option", { value: "none", text: t("None") }), options(sounds, undefined, (name) => name.charAt(0).toUpperCase() + name.slice(1)))),
      play));
  panel.redraw = () => {
    for (const [control, set] of controls) if (control !== document.activeElement) set();
  };
  panel.redrawOn = ["settings"];
}
