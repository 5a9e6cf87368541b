// The page title's unread count, and desktop notifications for DMs and mentions.

import { h, isolateText } from "./views/dom.js";
import { t } from "./i18n.js";

const ASKED_KEY = "palaver.notifications-asked";

// "(3) #general > lunch - Acme - Palaver"; the home view (all messages) is just the organization.
// Zulip's desktop app reads the count from the title, and from its bridge where it has one.
export function updateTitle(total, narrowTitle, realmName) {
  const view = narrowTitle ? `${narrowTitle} - ` : "";
  const count = total ? `(${total}) ` : "";
  document.title = `${count}${view}${realmName} - Palaver`;
  updateFavicon(total);
  window.electron_bridge?.send_event?.("total_unread_count", total);
}

let faviconCount = 0;

// The tab's icon: the page's own (images/favicon.svg) with no unread messages, or the same
// drawn with the unread count on a red badge.
export function updateFavicon(count) {
  const link = document.querySelector('link[rel="icon"]');
  if (!link || count === faviconCount) return;
  if (!link.dataset.plain) link.dataset.plain = link.href;
  faviconCount = count;
  if (!count) {
    link.href = link.dataset.plain;
    return;
  }
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 64;
  const g = canvas.getContext("2d");
  g.fillStyle = "#3d6fdb";
  g.beginPath();
  g.roundRect(0, 0, 64, 64, 14);
  g.fill();
  g.fillStyle = "#fff";
  g.font = "bold 40px sans-serif";
  g.textAlign = "center";
  g.textBaseline = "middle";
  g.fillText("P", 22, 34);
  const label = count > 99 ? "99+" : String(count);
  g.fillStyle = "#d93025";
  g.beginPath();
  g.roundRect(label.length > 1 ? 18 : 30, 0, label.length > 1 ? 46 : 34, 34, 17);
  g.fill();
  g.fillStyle = "#fff";
  g.font = `bold ${label.length > 2 ? 20 : 26}px sans-serif`;
  g.fillText(label, label.length > 1 ? 41 : 47, 18);
  link.href = canvas.toDataURL("image/png");
}

export function shouldNotify(message, flags, myId, settings) {
  if (message.sender_id === myId) return false;
  const mentioned = flags.includes("mentioned") || flags.includes("wildcard_mentioned");
  if (message.type === "private") return settings.enable_desktop_notifications !== false;
  return mentioned && settings.enable_desktop_notifications !== false;
}

// A desktop notification's title: who wrote and where. The sender, the channel ("#name")
// and the topic each sit between FSI and PDI (a title holds no markup), so a Latin name in
// a right-to-left title, or an Arabic one in a left-to-right title, keeps its punctuation
// on its own side.
export function notificationTitle(message, channelName) {
  const name = isolateText(message.sender_full_name);
  if (message.type !== "stream") return t("{name} (direct message)", { name });
  return t("{name} ({channel} > {topic})", { name, channel: isolateText(`#${channelName}`), topic: isolateText(message.subject) });
}

export function notifyMessage(message, title, onClick) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  if (document.visibilityState === "visible" && document.hasFocus()) return;
  const text = (message.content || "").replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim().slice(0, 200);
  const notification = new Notification(title, { body: text, tag: String(message.id) });
  notification.onclick = () => {
    window.focus();
    onClick();
    notification.close();
  };
}

// A banner offering notifications, shown once per browser (the browser then remembers).
export function offerNotifications(container) {
  if (!("Notification" in window) || Notification.permission !== "default" || localStorage.getItem(ASKED_KEY)) return;
  const done = () => {
    localStorage.setItem(ASKED_KEY, "1");
    banner.remove();
  };
  const banner = h("div", { class: "banner", role: "region", "aria-label": t("Notifications") },
    h("span", { text: t("Get desktop notifications for direct messages and mentions?") }),
    h("button", { type: "button", class: "primary", text: t("Enable"), onclick: () => Notification.requestPermission().finally(done) }),
    h("button", { type: "button", text: t("Not now"), onclick: done }));
  container.prepend(banner);
}
