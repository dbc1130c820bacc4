// The two requests of the first screen, /register and a page of messages. No imports but the
// API's: the first requests (start.js) go out before the rest of the app has loaded.

import { api } from "./api.js";

const CAPABILITIES = {
  notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: false,
  stream_typing_notifications: true, user_settings_object: true, empty_topic_name: true,
  linkifier_url_template: true,
};

// The parts of the initial state this client reads (every event still arrives): leaving out
// the list of all channels and the groups makes a large organization's answer a quarter smaller.
const FETCH = [
  "realm", "realm_user", "subscription", "message", "update_message_flags", "starred_messages", "user_topic",
  "presence", "user_settings", "realm_emoji", "recent_private_conversations", "user_status", "channel_folders",
  "muted_users", "alert_words",
];

export function register() {
  return api("POST", "register", {
    apply_markdown: true, client_gravatar: false, slim_presence: true, include_subscribers: false,
    client_capabilities: CAPABILITIES, fetch_event_types: FETCH,
  });
}

const PAGE = 50;

// A page of the narrow's messages: the newest (`anchor` "newest"), or those before message
// `anchor`.
export function fetchPage(narrow, anchor) {
  const params = { anchor, num_before: PAGE, num_after: 0, narrow, apply_markdown: true, client_gravatar: false };
  if (anchor !== "newest") params.include_anchor = false;
  return api("GET", "messages", params);
}
