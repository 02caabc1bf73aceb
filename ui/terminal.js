// terminal.js - a terminal in the page on the API's terminals (docs/api.md, "Terminals"): a
// shell started with "pty", its output stream written to term.js, what is typed posted to its
// stdin in order, and its size following the page's.
//
// The terminal lives in the sandbox: a suspend ends the output stream, and once the sandbox
// runs again the console attaches to the same shell.

import { call, send, stream, eventText } from "./api.js";

const SHELL = "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi";
const CHAR_W = 7.8;   // px of a 13 px monospace character: the columns that fit
const MIN_COLS = 40;
const MAX_COLS = 200;
const ROWS = 28;

export class Console {
  constructor(box, base, onStatus) {
    this.box = box;
    this.base = base;
    this.status = onStatus;
    this.pid = null;
    this.attached = null;  // the AbortController of the output stream, while attached
    this.exited = false;
    this.typed = "";       // typed, not yet posted
    this.posting = false;
    this.onResize = () => this.fit();
  }

  cols() {
    const w = this.box.clientWidth || 800;
    return Math.max(MIN_COLS, Math.min(MAX_COLS, Math.floor((w - 8) / CHAR_W)));
  }

  async start() {
    this.box.replaceChildren();
    this.term = new window.Terminal({ cols: this.cols(), rows: ROWS, useStyle: false, screenKeys: false, cursorBlink: false });
    this.term.open(this.box);
    this.term.on("data", (d) => this.type(d));
    const r = await call("POST", `${this.base}/processes`, {
      cmd: SHELL, pty: { cols: this.term.cols, rows: this.term.rows }, env: { TERM: "xterm" }, output: "drop", tag: "console",
    });
    this.pid = r.pid;
    this.box.dataset.pid = r.pid;
    this.flush(); // what was typed while it started
    window.addEventListener("resize", this.onResize);
    this.attach();
    this.term.focus();
  }

  // Reads the shell's output until it exits, or the stream ends (a suspend, a failure).
  async attach() {
    if (this.attached || this.exited || this.closed) return;
    const ctl = new AbortController();
    this.attached = ctl;
    this.status(`shell ${this.pid}: attached`);
    try {
      await stream("GET", `${this.base}/processes/${this.pid}/output`, {
        signal: ctl.signal,
        onEvent: (ev) => {
          if (ev.type === "stdout" || ev.type === "stderr") this.term.write(eventText(ev));
          else if (ev.type === "exit") {
            this.exited = true;
            this.status(`shell ${this.pid}: exited (${ev.signal ? "signal " + ev.signal : "status " + ev.exit_code})`);
          } else if (ev.type === "error") this.status(`shell ${this.pid}: detached (${ev.error.state || ev.error.message})`);
        },
      });
      if (!this.exited) this.status(`shell ${this.pid}: detached`);
    } catch (e) {
      if (!ctl.signal.aborted) this.status(`shell ${this.pid}: detached (${e.message})`);
    }
    if (this.attached === ctl) this.attached = null;
  }

  // The sandbox's state, as the page last read it: attach again once it runs.
  sandboxState(state) {
    this.state = state;
    if (state === "running" && this.pid && !this.attached) this.attach();
  }

  type(data) {
    if (this.exited) return;
    this.typed += data;
    this.flush();
  }

  // Posts what was typed, one request at a time so that it arrives in order.
  async flush() {
    if (this.posting || !this.typed || !this.pid) return;
    this.posting = true;
    while (this.typed && !this.closed) {
      const chunk = this.typed;
      this.typed = "";
      try {
        await send("POST", `${this.base}/processes/${this.pid}/stdin`, chunk);
      } catch (e) {
        this.status(`shell ${this.pid}: input lost (${e.message})`);
      }
    }
    this.posting = false;
  }

  async fit() {
    const cols = this.cols();
    if (!this.term || this.exited || cols === this.term.cols) return;
    this.term.resize(cols, ROWS);
    try {
      await call("POST", `${this.base}/processes/${this.pid}/resize`, { cols, rows: ROWS });
    } catch (e) {
      this.status(`shell ${this.pid}: resize refused (${e.message})`);
    }
  }

  close() {
    this.closed = true;
    window.removeEventListener("resize", this.onResize);
    if (this.attached) this.attached.abort();
    if (this.term) this.term.destroy();
    // a hang-up ends the shell; not asked of a paused or suspended sandbox, which it would resume
    if (this.pid && !this.exited && this.state === "running") call("POST", `${this.base}/processes/${this.pid}/signal`, { signal: "HUP" }).catch(() => {});
  }
}
