// The image viewer: a click on a picture in a message opens it full size over the page, with
// the other pictures of the current view a key press away (←/→), a download link and a link
// to the original file. Loaded on first use.

import { t } from "../i18n.js";
import { h, trapFocus } from "./dom.js";

// The pictures of the feed, in reading order: {src, href, name, sender}.
function imagesOf(container) {
  const found = [];
  for (const box of container.querySelectorAll(".message_inline_image:not(.message_inline_video)")) {
    const link = box.querySelector("a");
    const img = box.querySelector("img");
    if (!link || !img) continue;
    const article = box.closest("article.message");
    const head = article && article.closest(".recipient-group");
    let sender = "";
    if (article) {
      // A continued message has no sender line: the sender is the nearest one above it.
      let at = article;
      while (at && !at.querySelector(".sender-name")) at = at.previousElementSibling;
      sender = at ? at.querySelector(".sender-name").textContent : "";
    }
    found.push({ box, href: link.getAttribute("href"), name: link.getAttribute("title") || img.getAttribute("alt") || "", sender, where: head ? head.getAttribute("aria-label") : "" });
  }
  return found;
}

export function openLightbox(container, clickedBox) {
  closeLightbox();
  const images = imagesOf(container);
  let at = Math.max(0, images.findIndex((i) => i.box === clickedBox));
  const returnFocus = document.activeElement;
  const picture = h("img", { class: "lightbox-image", alt: "" });
  const caption = h("p", { class: "lightbox-caption" });
  const position = h("span", { class: "lightbox-position" });
  const download = h("a", { class: "button", text: t("Download") });
  const original = h("a", { class: "button", target: "_blank", rel: "noopener noreferrer", text: t("Open original") });
  const prev = h("button", { type: "button", class: "lightbox-nav prev", "aria-label": t("Previous image"), text: "‹", onclick: () => show(at - 1) });
  const next = h("button", { type: "button", class: "lightbox-nav next", "aria-label": t("Next image"), text: "›", onclick: () => show(at + 1) });
  const closeButton = h("button", { type: "button", text: t("Close"), onclick: () => closeLightbox() });
  const dialog = h("div", { class: "lightbox", role: "dialog", "aria-modal": "true", "aria-label": t("Image viewer"), id: "lightbox" },
    h("div", { class: "lightbox-bar" }, caption, position, download, original, closeButton),
    h("div", { class: "lightbox-stage" }, prev, picture, next));

  function show(index) {
    if (!images.length) return;
    at = (index + images.length) % images.length;
    const image = images[at];
    picture.src = image.href;
    picture.alt = image.name;
    caption.textContent = [image.sender, image.where, image.name].filter(Boolean).join(" · ");
    position.textContent = images.length > 1 ? t("{at} of {count}", { at: at + 1, count: images.length }) : "";
    download.href = image.href;
    download.setAttribute("download", image.name || "");
    original.href = image.href;
    prev.hidden = next.hidden = images.length < 2;
  }

  dialog.addEventListener("keydown", (event) => {
    if (event.key === "ArrowLeft") show(at - 1);
    else if (event.key === "ArrowRight") show(at + 1);
    else if (event.key === "Escape") closeLightbox();
    else return;
    event.preventDefault();
    event.stopPropagation();
  });
  dialog.addEventListener("mousedown", (event) => {
    if (event.target === dialog || event.target.classList.contains("lightbox-stage")) closeLightbox();
  });
  dialog.returnFocus = returnFocus;
  trapFocus(dialog);
  document.body.append(dialog);
  show(at);
  closeButton.focus();
}

export function closeLightbox() {
  const dialog = document.getElementById("lightbox");
  if (!dialog) return;
  dialog.remove();
  if (dialog.returnFocus && dialog.returnFocus.isConnected) dialog.returnFocus.focus({ preventScroll: true });
}
