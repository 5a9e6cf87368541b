// The page title's unread count, and desktop notifications for DMs and mentions.

import { h } from "./views/dom.js";

const ASKED_KEY = "palaver.notifications-asked";

// "(3) #general > lunch - Acme - Palaver"; the home view (all messages) is just the organization.
export function updateTitle(total, narrowTitle, realmName) {
  const view = narrowTitle ? `${narrowTitle} - ` : "";
  document.title = `${total ? `(${total}) ` : ""}${view}${realmName} - Palaver`;
}

export function shouldNotify(message, flags, myId, settings) {
  if (message.sender_id === myId) return false;
  const mentioned = flags.includes("mentioned") || flags.includes("wildcard_mentioned");
  if (message.type === "private") return settings.enable_desktop_notifications !== false;
  return mentioned && settings.enable_desktop_notifications !== false;
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
  const banner = h("div", { class: "banner", role: "region", "aria-label": "Notifications" },
    h("span", { text: "Get desktop notifications for direct messages and mentions?" }),
    h("button", { type: "button", class: "primary", text: "Enable", onclick: () => Notification.requestPermission().finally(done) }),
    h("button", { type: "button", text: "Not now", onclick: done }));
  container.prepend(banner);
}
