// Desktop notifications and a short sound for direct messages and mentions, as the person's
// settings ask. The sound is synthesized, so there is no audio file to fetch.

import { state, userName } from "./state.js";
import { t } from "./texts.js";

let audio = null;

function beep() {
  try {
    audio = audio || new AudioContext();
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    tone.frequency.value = 880;
    gain.gain.setValueAtTime(0.08, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + 0.25);
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.25);
  } catch {
    // No audio device or not allowed yet: the message is on screen anyway.
  }
}

export function onMessage(ev) {
  const m = ev.message;
  const flags = ev.flags || [];
  if (m.sender_id === state.me.user_id || flags.includes("read")) return;
  const personal = m.type === "private" || flags.some((f) => f.endsWith("mentioned"));
  if (!personal) return;
  if (state.settings.enable_sounds) beep();
  if (state.settings.enable_desktop_notifications && document.hidden && window.Notification?.permission === "granted") {
    const where = m.type === "private" ? t("notify.sent_you_a_direct_message") : t("notify.mentioned_you_in", { display_recipient: m.display_recipient });
    new Notification(`${userName(m.sender_id)} ${where}`, { tag: `chronicle-${m.id}` });
  }
}
