// Logging out of this browser (the top bar's button and Settings › Account & privacy).

import { api } from "./api.js";
import { toast } from "./dom.js";
import { t } from "./texts.js";

export async function logout() {
  try {
    await api("POST", "logout");
    location.assign("/login/");
  } catch (error) {
    toast(t("session.could_not_log_out", { message: error.message }));
  }
}
