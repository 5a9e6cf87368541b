// Settings: your avatar. Upload a picture (POST /users/me/avatar, cropped by the server to
// a square) or go back to the drawn initials (DELETE). The realm_user event that follows
// updates the picture everywhere, here included.

import { t } from "../i18n.js";
import { avatar, clear, h } from "./dom.js";
import { field, submit } from "./settings.js";

export function render(app, panel) {
  const picture = h("div", { class: "avatar-preview" });
  const me = () => app.state.users.get(app.state.myId) || {};
  const remove = h("button", { type: "button", class: "danger", text: t("Delete avatar"), onclick: () => submit(app, () => app.api.del("/users/me/avatar"), t("Avatar deleted")) });
  const draw = () => {
    clear(picture).append(avatar(me(), "large"));
    const img = picture.querySelector("img");
    if (img) img.alt = t("Your avatar");
    // Generated avatars (initials on a colour) are what there is to go back to.
    remove.hidden = !me().avatar_url || me().avatar_url.includes("/user_avatars/generated/");
  };
  const file = h("input", { type: "file", required: true, accept: "image/png,image/jpeg,image/gif,image/webp" });
  const form = h("form", {}, ...field("avatar-file", t("Picture"), file), h("button", { type: "submit", class: "primary", text: t("Upload avatar") }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData();
    body.append("file", file.files[0], file.files[0].name);
    if (await submit(app, () => app.api.request("POST", "/users/me/avatar", null, { body }), t("Avatar uploaded"))) form.reset();
  });
  panel.append(h("h2", { text: t("Avatar") }), picture, form, remove);
  draw();
  panel.redraw = draw;
  panel.redrawOn = ["users"];
}
