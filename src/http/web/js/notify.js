// Desktop notifications and a short sound for new messages, by Zulip's rules and the person's
// settings: direct messages, mentions and alert words by `enable_desktop_notifications` and
// `enable_sounds`; a channel's messages by the subscription's `desktop_notifications` and
// `audible_notifications` (or, unset, the person's `enable_stream_…` defaults); followed topics
// by `enable_followed_topic_…`; `@all`-style mentions by `wildcard_mentions_notify`. Muted
// topics and channels notify only of mentions. The notification shows the sender, where, and
// the start of the message. The sounds are synthesized, so there is no audio file to fetch.

import { state, userName, topicHeard, topicVisibility, TOPIC_FOLLOWED } from "./state.js";
import { messageText } from "./sanitize.js";
import { t } from "./texts.js";

let audio = null;

// Zulip's sound names, each a short synthesized figure: [frequency Hz, start s, length s].
export const SOUNDS = {
  zulip: [[880, 0, 0.25]],
  chime: [[660, 0, 0.18], [990, 0.12, 0.3]],
  ding: [[1320, 0, 0.5]],
};

export function play(name = state.settings.notification_sound) {
  const notes = SOUNDS[name];
  if (!notes) return;
  try {
    audio = audio || new AudioContext();
    for (const [frequency, start, length] of notes) {
      const tone = audio.createOscillator();
      const gain = audio.createGain();
      const at = audio.currentTime + start;
      tone.frequency.value = frequency;
      gain.gain.setValueAtTime(0.08, at);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + length);
      tone.connect(gain).connect(audio.destination);
      tone.start(at);
      tone.stop(at + length);
    }
  } catch {
    // No audio device or not allowed yet: the message is on screen anyway.
  }
}

// What a new message asks for: {desktop, sound}, by Zulip's rules.
export function wanted(m, flags) {
  const s = state.settings;
  const direct = m.type === "private" || flags.includes("mentioned") || flags.includes("has_alert_word");
  if (direct) return { desktop: Boolean(s.enable_desktop_notifications), sound: Boolean(s.enable_sounds) };
  const sub = state.subs.get(m.stream_id);
  if (m.type !== "stream" || !sub) return { desktop: false, sound: false };
  const followed = topicVisibility(m.stream_id, m.subject) === TOPIC_FOLLOWED;
  const wildcard = flags.includes("wildcard_mentioned")
    && ((sub.wildcard_mentions_notify ?? s.wildcard_mentions_notify) !== false || (followed && Boolean(s.enable_followed_topic_wildcard_mentions_notify)));
  if (!topicHeard(m.stream_id, m.subject)) return { desktop: wildcard && Boolean(s.enable_desktop_notifications), sound: wildcard && Boolean(s.enable_sounds) };
  return {
    desktop: Boolean(sub.desktop_notifications ?? s.enable_stream_desktop_notifications) || (followed && Boolean(s.enable_followed_topic_desktop_notifications))
      || (wildcard && Boolean(s.enable_desktop_notifications)),
    sound: Boolean(sub.audible_notifications ?? s.enable_stream_audible_notifications) || (followed && Boolean(s.enable_followed_topic_audible_notifications))
      || (wildcard && Boolean(s.enable_sounds)),
  };
}

const BODY_LENGTH = 150;

export function onMessage(ev) {
  const m = ev.message;
  const flags = ev.flags || [];
  if (m.sender_id === state.me.user_id || flags.includes("read")) return;
  const { desktop, sound } = wanted(m, flags);
  if (sound) play();
  if (desktop && document.hidden && window.Notification?.permission === "granted") {
    const where = m.type === "private" ? t("notify.sent_you_a_direct_message")
      : flags.some((f) => f.endsWith("mentioned")) ? t("notify.mentioned_you_in", { display_recipient: m.display_recipient })
        : t("notify.wrote_in", { place: `${m.display_recipient} › ${m.subject}` });
    // A direct message's words only where the person allows them there.
    const text = m.type === "private" && state.settings.pm_content_in_desktop_notifications === false ? "" : messageText(m.content);
    new Notification(`${userName(m.sender_id)} ${where}`, { tag: `chronicle-${m.id}`, body: text.length > BODY_LENGTH ? `${text.slice(0, BODY_LENGTH)}…` : text });
  }
}
