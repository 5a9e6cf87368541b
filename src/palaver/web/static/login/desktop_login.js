// The desktop app's window while the person signs in with their browser (desktop_flow_otp).
// The app makes an AES-GCM key and watches the clipboard for a code encrypted to it
// (electron_bridge.decrypt_clipboard); without the bridge, the key is made here and the
// code is pasted by hand. The key goes to the browser as the pad; the token comes back.

function fromHex(text) {
  const pairs = text.trim().match(/../g) || [];
  return new Uint8Array(pairs.map((pair) => Number.parseInt(pair, 16)));
}

async function pastedByHand() {
  const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["decrypt"]);
  const field = document.getElementById("desktop-paste");
  document.getElementById("desktop-paste-row").hidden = false;
  const pasted = new Promise((resolve) => {
    field.addEventListener("input", async () => {
      const data = fromHex(field.value);
      try {
        const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: data.slice(0, 12) }, key, data.slice(12));
        resolve(new TextDecoder().decode(plain));
      } catch {
        // Not (yet) the code encrypted to this key.
      }
    });
  });
  return { key: new Uint8Array(await crypto.subtle.exportKey("raw", key)), pasted };
}

const bridge = window.electron_bridge;
const { key, pasted } = bridge && bridge.decrypt_clipboard ? bridge.decrypt_clipboard(1) : await pastedByHand();
const pad = Array.from(key, (byte) => byte.toString(16).padStart(2, "0")).join("");
const params = new URLSearchParams(window.location.search);
params.set("desktop_flow_otp", pad);
window.open(`${window.location.pathname}?${params}`, "_blank");
const token = await pasted;
document.getElementById("desktop-waiting").hidden = true;
document.getElementById("desktop-done").hidden = false;
window.location.assign(`/accounts/login/subdomain/${encodeURIComponent(token)}`);
