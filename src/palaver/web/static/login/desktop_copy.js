// The desktop flow's last page in the browser: "Copy" puts the encrypted code on the
// clipboard, where the desktop app (which alone can decrypt it) is watching.
const field = document.getElementById("desktop-data");
const button = document.getElementById("desktop-copy");
button.addEventListener("click", async () => {
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    document.execCommand("copy");
  }
});
button.focus();
