// The last page of the desktop app's sign-in in the system browser: copies the encrypted
// login token for the app to take.

const field = document.getElementById("desktop-data");
const copied = document.getElementById("desktop-copied");

async function copy() {
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    field.select();
    document.execCommand("copy");
  }
  copied.hidden = false;
}

document.getElementById("desktop-copy").addEventListener("click", copy);
field.addEventListener("focus", () => field.select());
