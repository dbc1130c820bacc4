// Logging out of this browser (the top bar's button and Settings › Account & privacy).

import { api } from "./api.js";
import { toast } from "./dom.js";

export async function logout() {
  try {
    await api("POST", "logout");
    location.assign("/login/");
  } catch (error) {
    toast(`Could not log out: ${error.message}`);
  }
}
