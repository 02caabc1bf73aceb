// sandbox.js - one sandbox: its facts, its lifecycle buttons, its CPU, memory and disk over
// time (GET .../metrics, which never resumes it), its processes and a terminal.

import { call } from "./api.js";
import { el, stateBadge, age, bytes, toast } from "./view.js";
import { Console } from "./terminal.js";

const POLL_MS = 3000;

function chart(canvas, label, yMax, format) {
  return new window.Chart(canvas, {
    type: "line",
    data: { labels: [], datasets: [{ label, data: [], borderColor: "#2457c5", backgroundColor: "rgba(36,87,197,.12)", fill: true, pointRadius: 0, tension: 0.2 }] },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { legend: { display: true } },
      scales: { y: { beginAtZero: true, suggestedMax: yMax, ticks: { callback: format } }, x: { ticks: { maxTicksLimit: 6 } } },
    },
  });
}

export function sandboxView(root, id) {
  let timer = null;
  let gone = false;
  let sb = null;
  let term = null;
  const base = `/v1/sandboxes/${id}`;

  const title = el("h1", {}, "Sandbox ", el("code", {}, id), " ", el("span", { id: "state" }));
  const facts = el("dl", { class: "facts", id: "facts" });
  const buttons = {};
  const actions = el("div", { class: "row", id: "actions" });
  const act = (name, label, fn, cls) => {
    buttons[name] = el("button", { id: `btn-${name}`, class: cls, onclick: fn }, label);
    actions.append(buttons[name]);
  };
  const procRows = el("tbody", { id: "process-rows" });
  const canvases = ["cpu", "mem", "disk"].map((k) => el("canvas", { id: `chart-${k}` }));
  const termBox = el("div", { id: "terminal" });
  const termBtn = el("button", { id: "open-terminal", class: "plain" }, "Open terminal");
  const termStatus = el("span", { id: "terminal-status", class: "muted" });

  root.append(title,
    el("section", { class: "panel" }, actions, facts),
    el("section", { class: "panel" }, el("h2", {}, "Usage"), el("div", { class: "charts" }, canvases.map((c) => el("div", {}, c)))),
    el("section", { class: "panel" }, el("h2", {}, "Terminal"), el("div", { class: "row" }, termBtn, termStatus), termBox),
    el("section", { class: "panel" }, el("h2", {}, "Processes"),
      el("table", {}, el("thead", {}, el("tr", {}, ["pid", "command", "state", "exit", "started"].map((h) => el("th", {}, h)))), procRows)));

  const charts = {
    cpu: chart(canvases[0], "CPU %", 100, (v) => `${v}%`),
    mem: chart(canvases[1], "memory", undefined, (v) => bytes(v)),
    disk: chart(canvases[2], "disk", undefined, (v) => bytes(v)),
  };

  async function lifecycle(verb, body) {
    for (const b of Object.values(buttons)) b.disabled = true;
    try {
      if (verb === "delete") {
        if (!confirm(`Delete sandbox ${id}? Its processes and files go.`)) return;
        await call("DELETE", base);
        location.hash = "#/";
        return;
      }
      const r = await call("POST", `${base}/${verb}`, body);
      if (verb === "snapshot") toast(`snapshot ${r.id} made`);
      else if (verb === "fork") toast(`forked: ${r.sandboxes.map((s) => s.id).join(", ")}`);
      else show(r);
    } catch (e) {
      toast(`${verb}: ${e.message}`, true);
    } finally {
      refresh();
    }
  }
  act("pause", "Pause", () => lifecycle("pause"));
  act("resume", "Resume", () => lifecycle("resume"));
  act("suspend", "Suspend", () => lifecycle("suspend"));
  act("snapshot", "Snapshot", () => lifecycle("snapshot", {}), "plain");
  act("fork", "Fork", () => lifecycle("fork", { count: 1 }), "plain");
  act("delete", "Delete", () => lifecycle("delete"), "danger");

  function show(s) {
    sb = s;
    document.getElementById("state").replaceChildren(stateBadge(s.state));
    const rows = [["template", s.template], ["isolation", s.isolation], ["created", `${s.created_at} (${age(s.created_at)} ago)`],
      ["cpus / memory / disk", `${s.cpus} / ${s.memory_mb} MB / ${s.disk_mb} MB`],
      ["idle timeout", s.timeout ? `${s.timeout} s, then ${s.timeout_action}` : "none"],
      ["network", s.network ? `${s.network.egress}, ${s.network.address}` : "none"],
      ["metadata", Object.entries(s.metadata || {}).map(([k, v]) => `${k}=${v}`).join(" ") || "-"]];
    if (s.reason) rows.push(["reason", s.reason]);
    facts.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    const st = s.state;
    buttons.pause.disabled = st !== "running";
    buttons.resume.disabled = st !== "paused" && st !== "suspended";
    buttons.suspend.disabled = st !== "running" && st !== "paused";
    buttons.snapshot.disabled = st !== "running" && st !== "paused";
    buttons.fork.disabled = st !== "running" && st !== "paused";
    buttons.delete.disabled = st === "deleting";
    termBtn.disabled = st !== "running";
    if (term) term.sandboxState(st);
  }

  function plot(samples) {
    const labels = samples.map((m) => m.timestamp.slice(11, 19));
    const put = (c, values) => {
      c.data.labels = labels;
      c.data.datasets[0].data = values;
      c.update();
    };
    put(charts.cpu, samples.map((m) => m.cpu_used_pct));
    charts.mem.options.scales.y.suggestedMax = sb ? sb.memory_mb * 1048576 : undefined; // its limit
    put(charts.mem, samples.map((m) => m.mem_used_bytes));
    put(charts.disk, samples.map((m) => m.disk_used_bytes));
  }

  function processes(list) {
    procRows.replaceChildren(...list.slice().reverse().map((p) => el("tr", { "data-pid": p.pid },
      el("td", {}, p.pid), el("td", {}, el("code", {}, p.cmd)), el("td", {}, p.state),
      el("td", {}, p.signal ? `signal ${p.signal}` : p.exit_code ?? ""), el("td", {}, p.started_at || ""))));
  }

  // The sandbox, its samples and its processes; none of these resumes it.
  async function refresh() {
    clearTimeout(timer);
    if (gone) return;
    try {
      show(await call("GET", base));
      plot((await call("GET", `${base}/metrics`)).metrics);
      processes((await call("GET", `${base}/processes`)).processes);
    } catch (e) {
      if (e.status === 404) {
        toast(`sandbox ${id} is gone`, true);
        gone = true;
      } else if (e.status !== 401) {
        toast(e.message, true);
      }
    }
    if (!gone) timer = setTimeout(refresh, POLL_MS);
  }

  termBtn.addEventListener("click", async () => {
    if (term) term.close();
    term = new Console(termBox, base, (s) => (termStatus.textContent = s));
    try {
      await term.start();
      termBtn.textContent = "New terminal";
    } catch (e) {
      termStatus.textContent = `cannot start a terminal: ${e.message}`;
    }
    if (sb) term.sandboxState(sb.state);
  });

  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
    if (term) term.close();
    Object.values(charts).forEach((c) => c.destroy());
  };
}
