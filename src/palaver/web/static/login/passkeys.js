// Passkeys on the server-rendered sign-in pages: signing in with one (login page), using one
// as the second factor after a password (/accounts/login/2fa/), and registering one
// (security page, /accounts/2fa/). The server makes the options and checks
// the answers (web/passkeys.py); this only hands them to the browser's WebAuthn API.

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.msg || `HTTP ${response.status}`);
  return data;
}

function showError(element, error) {
  element.textContent = error.name === "NotAllowedError" ? "The passkey request was cancelled." : error.message;
  element.hidden = false;
}

async function signIn(button) {
  const status = document.getElementById("passkey-error");
  status.hidden = true;
  try {
    const options = await post("/accounts/login/passkey/options");
    const credential = await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
    });
    const result = await post("/accounts/login/passkey/verify", {
      credential: credential.toJSON(),
      next: button.dataset.next || "/",
      app_flow: button.dataset.appFlow || null,
    });
    window.location.assign(result.redirect);
  } catch (error) {
    showError(status, error);
  }
}

async function secondFactor(button) {
  const status = document.getElementById("passkey-error");
  status.hidden = true;
  try {
    const pending = button.dataset.pending;
    const options = await post("/accounts/login/2fa/passkey/options", { pending });
    const credential = await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
    });
    const remember = document.getElementById("id_remember");
    const result = await post("/accounts/login/2fa/passkey/verify", {
      credential: credential.toJSON(),
      pending,
      remember: Boolean(remember && remember.checked),
    });
    window.location.assign(result.redirect);
  } catch (error) {
    showError(status, error);
  }
}

async function register(button) {
  const status = document.getElementById("passkey-status");
  status.hidden = true;
  try {
    const options = await post("/accounts/passkeys/register/options");
    const credential = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
    });
    const name = document.getElementById("passkey-name").value;
    await post("/accounts/passkeys/register/verify", { credential: credential.toJSON(), name });
    window.location.reload();
  } catch (error) {
    showError(status, error);
  }
}

const supported = typeof window.PublicKeyCredential === "function";
const actions = [["passkey-login", signIn], ["passkey-add", register], ["tf-passkey", secondFactor]];
for (const [id, action] of actions) {
  const button = document.getElementById(id);
  if (!button) continue;
  button.hidden = !supported;
  button.addEventListener("click", () => action(button));
}
