// The desktop app's sign-in through the system browser (Zulip's desktop_flow_otp protocol):
// this page, in the app's window, makes an AES-GCM key, opens this same address in the system
// browser with the key as desktop_flow_otp, and waits for the code the browser's last page
// gives (the login token encrypted with the key). With the code decrypted, the app's window
// signs in at /accounts/login/subdomain/TOKEN.

const form = document.getElementById("desktop-form");
const tokenField = document.getElementById("desktop-token");
const badToken = document.getElementById("desktop-bad-token");
const submit = document.getElementById("desktop-submit");

form.addEventListener("submit", (event) => {
  event.preventDefault();
  badToken.hidden = false;
});
tokenField.focus();

function bytesOfHex(text) {
  const pairs = text.trim().match(/^(?:[0-9a-fA-F]{2})+$/) ? text.trim().match(/../g) : null;
  return pairs ? new Uint8Array(pairs.map((pair) => Number.parseInt(pair, 16))) : null;
}

// Without the app's bridge: a key of our own, and the code pasted into the field.
async function decryptPasted() {
  const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["decrypt"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", key));
  const pasted = new Promise((resolve) => {
    tokenField.addEventListener("input", async () => {
      badToken.hidden = true;
      submit.disabled = tokenField.value === "";
      const data = bytesOfHex(tokenField.value);
      if (!data || data.length <= 12) {
        return;
      }
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: data.slice(0, 12) },
          key,
          data.slice(12),
        );
        resolve(new TextDecoder().decode(plain));
      } catch {
        // Not (yet) a whole code for this key: wait for more.
      }
    });
  });
  return { key: raw, pasted };
}

async function start() {
  const bridge = window.electron_bridge;
  const { key, pasted } =
    bridge && bridge.decrypt_clipboard ? bridge.decrypt_clipboard(1) : await decryptPasted();
  const keyHex = [...key].map((b) => b.toString(16).padStart(2, "0")).join("");
  const query = window.location.search ? `${window.location.search}&` : "?";
  window.open(`${window.location.pathname}${query}desktop_flow_otp=${keyHex}`, "_blank");
  const token = await pasted;
  form.hidden = true;
  document.getElementById("desktop-done").hidden = false;
  window.location.href = `/accounts/login/subdomain/${encodeURIComponent(token)}`;
}

start();
