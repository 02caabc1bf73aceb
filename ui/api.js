// api.js - the console's only way to spaced: its HTTP API, with the signed-in token.
//
// The token lives in sessionStorage (gone with the tab) and goes with every request as
// `Authorization: Bearer`; the API's own rules (tenants, limits) decide what it sees.

const TOKEN_KEY = "space.token";

export class ApiError extends Error {
  constructor(status, code, message, state) {
    super(message);
    this.status = status;
    this.code = code;
    this.state = state;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// Called when spaced answers 401: the page goes back to signing in.
let onUnauthorized = () => {};
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

function headers(extra) {
  const h = { ...extra };
  if (token()) h.Authorization = `Bearer ${token()}`;
  return h;
}

async function fail(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch (e) {
    body = null;
  }
  const err = body && body.error ? body.error : { code: "http_" + resp.status, message: resp.statusText };
  if (resp.status === 401) onUnauthorized();
  return new ApiError(resp.status, err.code, err.message || err.code, err.state);
}

// A JSON request: the decoded answer (null for 204), or throws ApiError.
export async function call(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (!resp.ok) throw await fail(resp);
  if (resp.status === 204) return null;
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

// A request with raw bytes (a string or Uint8Array) as its body.
export async function send(method, path, bytes) {
  const resp = await fetch(path, { method, headers: headers({ "Content-Type": "application/octet-stream" }), body: bytes });
  if (!resp.ok) throw await fail(resp);
}

// Opens an NDJSON stream and calls onEvent with each event as it comes; resolves when the
// stream ends. signal (an AbortSignal) closes it.
export async function stream(method, path, { body, raw, signal, onEvent }) {
  const init = { method, signal, headers: headers(raw !== undefined ? { "Content-Type": "application/octet-stream" } : {}) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  } else if (raw !== undefined) {
    init.body = raw;
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await fail(resp);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}

// An output event's bytes as text: `data` as it is, `data_b64` decoded (API: Conventions).
export function eventText(ev, name = "data") {
  if (typeof ev[name] === "string") return ev[name];
  const b64 = ev[name + "_b64"];
  if (typeof b64 !== "string") return "";
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}
