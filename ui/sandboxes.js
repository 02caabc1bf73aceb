// sandboxes.js - the list of sandboxes (filtered by text and state) and a form to create one.

import { call } from "./api.js";
import { el, stateBadge, age, toast } from "./view.js";

const POLL_MS = 3000;
const STATES = ["creating", "running", "pausing", "paused", "resuming", "suspending", "suspended", "failed", "deleting"];

export function sandboxesView(root) {
  let sandboxes = [];
  let timer = null;
  const text = el("input", { type: "search", id: "filter-text", placeholder: "filter: id, template, metadata" });
  const state = el("select", { id: "filter-state" }, el("option", { value: "" }, "any state"),
    STATES.map((s) => el("option", { value: s }, s)));
  const body = el("tbody", { id: "sandbox-rows" });
  const count = el("span", { class: "muted" });

  const template = el("select", { id: "create-template" });
  const createBtn = el("button", { id: "create", type: "submit" }, "Create sandbox");
  const isolation = el("select", { id: "create-isolation" }, el("option", { value: "" }, "default isolation"),
    el("option", { value: "gvisor" }, "gvisor"), el("option", { value: "microvm" }, "microvm"));
  const form = el("form", { class: "row", id: "create-form" }, template, isolation,
    el("input", { id: "create-memory", type: "number", min: 64, max: 65536, step: 64, placeholder: "memory MB" }),
    createBtn);

  root.append(el("h1", {}, "Sandboxes"),
    el("section", { class: "panel" }, form),
    el("section", { class: "panel" },
      el("div", { class: "row" }, text, state, count),
      el("table", {}, el("thead", {}, el("tr", {}, ["id", "state", "isolation", "template", "age", "metadata"].map((h) => el("th", {}, h)))), body)));

  function matches(sb) {
    if (state.value && sb.state !== state.value) return false;
    const q = text.value.trim().toLowerCase();
    if (!q) return true;
    const hay = [sb.id, sb.template, sb.state, sb.isolation, ...Object.entries(sb.metadata || {}).map(([k, v]) => `${k}=${v}`)];
    return hay.some((s) => String(s).toLowerCase().includes(q));
  }

  function render() {
    const shown = sandboxes.filter(matches);
    count.textContent = `${shown.length} of ${sandboxes.length}`;
    body.replaceChildren(...shown.map((sb) => el("tr", { class: "link", "data-id": sb.id, onclick: () => (location.hash = `#/sandboxes/${sb.id}`) },
      el("td", {}, el("code", {}, sb.id)), el("td", {}, stateBadge(sb.state)), el("td", {}, sb.isolation), el("td", {}, sb.template),
      el("td", { title: sb.created_at }, age(sb.created_at)),
      el("td", { class: "muted" }, Object.entries(sb.metadata || {}).map(([k, v]) => `${k}=${v}`).join(" ")))));
  }

  async function refresh() {
    try {
      sandboxes = (await call("GET", "/v1/sandboxes")).sandboxes;
      render();
    } catch (e) {
      if (e.status !== 401) toast(`sandboxes: ${e.message}`, true);
    }
    timer = setTimeout(refresh, POLL_MS);
  }

  text.addEventListener("input", render);
  state.addEventListener("change", render);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const req = { template: template.value || "default", metadata: { "created-by": "console" } };
    if (isolation.value) req.isolation = isolation.value;
    const mem = document.getElementById("create-memory").value;
    if (mem) req.memory_mb = Number(mem);
    createBtn.disabled = true;
    createBtn.textContent = "Creating...";
    try {
      const sb = await call("POST", "/v1/sandboxes", req);
      location.hash = `#/sandboxes/${sb.id}`;
    } catch (e) {
      toast(`create: ${e.message}`, true);
    } finally {
      createBtn.disabled = false;
      createBtn.textContent = "Create sandbox";
    }
  });

  call("GET", "/v1/templates").then((r) => {
    template.replaceChildren(...r.templates.map((t) => el("option", { value: t.name, selected: t.name === "default" }, t.name)));
  }).catch(() => template.replaceChildren(el("option", { value: "default" }, "default")));
  refresh();
  return () => clearTimeout(timer);
}
