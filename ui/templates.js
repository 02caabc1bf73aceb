// templates.js - the templates (GET /v1/templates) and building one from a Dockerfile typed
// here (POST /v1/templates, whose answer is the build's log as it goes). Builds are the
// operator's: a tenant's token is told 403 by spaced.

import { call, stream, eventText } from "./api.js";
import { el, bytes, age, toast } from "./view.js";

// A tar stream (ustar) of one file: the build context of a Dockerfile alone.
function tarOf(name, text) {
  const data = new TextEncoder().encode(text);
  const header = new Uint8Array(512);
  const put = (off, len, s) => header.set(new TextEncoder().encode(s).slice(0, len), off);
  const octal = (n, len) => n.toString(8).padStart(len - 1, "0") + "\0";
  put(0, 100, name);
  put(100, 8, "0000644\0");
  put(108, 8, octal(0, 8));
  put(116, 8, octal(0, 8));
  put(124, 12, octal(data.length, 12));
  put(136, 12, octal(Math.floor(Date.now() / 1000), 12));
  put(148, 8, "        ");
  put(156, 1, "0");
  put(257, 8, "ustar\x0000");
  let sum = 0;
  for (const b of header) sum += b;
  put(148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  const padded = Math.ceil(data.length / 512) * 512;
  const out = new Uint8Array(512 + padded + 1024);
  out.set(header, 0);
  out.set(data, 512);
  return out;
}

export function templatesView(root) {
  const rows = el("tbody", { id: "template-rows" });
  const detail = el("pre", { class: "log", id: "template-detail", hidden: true });
  const name = el("input", { id: "build-name", placeholder: "name (NAME or NAME:TAG)", required: true });
  const dockerfile = el("textarea", { id: "build-dockerfile", rows: 6, cols: 60 }, "FROM default\nRUN echo built > /etc/built-by-console\n");
  const log = el("pre", { class: "log", id: "build-log" });
  const buildBtn = el("button", { type: "submit", id: "build" }, "Build");
  const cancelBtn = el("button", { type: "button", class: "plain", id: "build-cancel", disabled: true }, "Cancel");
  let building = null;
  const form = el("form", { id: "build-form" }, el("div", { class: "row" }, name, buildBtn, cancelBtn), dockerfile, el("h2", {}, "Log"), log);

  root.append(el("h1", {}, "Templates"),
    el("section", { class: "panel" },
      el("table", {}, el("thead", {}, el("tr", {}, ["name", "size", "made", "source"].map((h) => el("th", {}, h)))), rows), detail),
    el("section", { class: "panel" }, el("h2", {}, "Build from a Dockerfile"), form));

  async function show(t) {
    try {
      const full = await call("GET", `/v1/templates/${encodeURIComponent(t.name)}`);
      detail.hidden = false;
      detail.textContent = JSON.stringify(full, null, 2);
    } catch (e) {
      toast(e.message, true);
    }
  }

  async function list() {
    try {
      const r = await call("GET", "/v1/templates");
      rows.replaceChildren(...r.templates.map((t) => el("tr", { class: "link", onclick: () => show(t) },
        el("td", {}, el("code", {}, t.name)), el("td", {}, bytes(t.bytes)), el("td", { title: t.created_at }, t.created_at ? age(t.created_at) + " ago" : ""),
        el("td", { class: "muted" }, t.source || ""))));
    } catch (e) {
      if (e.status !== 401) toast(`templates: ${e.message}`, true);
    }
  }

  const line = (s) => {
    log.append(s.endsWith("\n") ? s : s + "\n");
    log.scrollTop = log.scrollHeight;
  };

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const n = name.value.trim();
    log.replaceChildren();
    building = new AbortController();
    buildBtn.disabled = true;
    cancelBtn.disabled = false;
    try {
      await stream("POST", `/v1/templates?name=${encodeURIComponent(n)}`, {
        raw: tarOf("Dockerfile", dockerfile.value), signal: building.signal,
        onEvent: (e) => {
          if (e.type === "step") line(`[${e.step}/${e.steps}] ${e.text}${e.cached ? " (cached)" : ""}`);
          else if (e.type === "output") line(eventText(e));
          else if (e.type === "waiting") line(`waiting: ${e.message}`);
          else if (e.type === "done") line(`done: template ${e.template.name}`);
          else if (e.type === "error") line(`error: ${e.error.message}`);
        },
      });
      list();
    } catch (e) {
      if (!building.signal.aborted) line(`error: ${e.message}`);
    } finally {
      buildBtn.disabled = false;
      cancelBtn.disabled = true;
      building = null;
    }
  });
  cancelBtn.addEventListener("click", async () => {
    try {
      await call("DELETE", `/v1/templates/${encodeURIComponent(name.value.trim())}/build`);
    } catch (e) {
      toast(`cancel: ${e.message}`, true);
    }
  });

  list();
  return () => building && building.abort();
}
