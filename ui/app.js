// app.js - the console's shell: signing in, and the views by the page's #hash.
//
//   #/                the sandboxes          (sandboxes.js)
//   #/sandboxes/ID    one sandbox            (sandbox.js)
//   #/templates       templates and builds   (templates.js)

import { call, setToken, token, whenUnauthorized, ApiError } from "./api.js";
import { el } from "./view.js";
import { sandboxesView } from "./sandboxes.js";
import { sandboxView } from "./sandbox.js";
import { templatesView } from "./templates.js";

const SIGNED_KEY = "space.signed"; // set once spaced took the token (or none, on its Unix socket)
const main = document.getElementById("main");
let leave = null; // the current view's cleanup: stops its polling and streams

function signinView(root, message) {
  const input = el("input", { type: "password", id: "token", autocomplete: "off", placeholder: "bearer token" });
  const error = el("p", { class: "error", id: "signin-error" }, message || "");
  const form = el("form", { class: "signin panel", id: "signin" },
    el("h1", {}, "Sign in to space"),
    el("label", { for: "token" }, "Token (", el("code", {}, "spaced token create"), "); none on spaced's Unix socket"),
    input,
    el("button", { type: "submit" }, "Sign in"),
    error);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    try {
      await call("GET", "/v1/health");
      sessionStorage.setItem(SIGNED_KEY, "1");
      route();
    } catch (e) {
      setToken("");
      error.textContent = e instanceof ApiError && e.status === 401 ? "spaced does not know this token" : e.message;
    }
  });
  root.append(form);
  input.focus();
}

function route() {
  if (leave) leave();
  leave = null;
  main.replaceChildren();
  const hash = location.hash.replace(/^#/, "") || "/";
  document.getElementById("sign-out").hidden = !token();
  document.getElementById("who").textContent = token() ? "signed in" : "";
  if (sessionStorage.getItem(SIGNED_KEY) !== "1") {
    signinView(main);
    return;
  }
  let m;
  if ((m = hash.match(/^\/sandboxes\/([0-9a-f]+)$/))) leave = sandboxView(main, m[1]);
  else if (hash === "/templates") leave = templatesView(main);
  else leave = sandboxesView(main);
}

// A token refused once signed in (removed meanwhile): back to signing in. The sign-in form
// says itself why a token it tries is refused.
whenUnauthorized(() => {
  if (sessionStorage.getItem(SIGNED_KEY) !== "1") return;
  setToken("");
  sessionStorage.removeItem(SIGNED_KEY);
  if (leave) leave();
  leave = null;
  main.replaceChildren();
  signinView(main, "spaced refused the token: sign in again");
});

document.getElementById("sign-out").addEventListener("click", () => {
  setToken("");
  sessionStorage.removeItem(SIGNED_KEY);
  route();
});

window.addEventListener("hashchange", route);
route();
