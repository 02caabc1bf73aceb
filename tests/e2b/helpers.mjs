// tests/e2b/helpers.mjs - what the E2B suite's files share: the unmodified E2B SDK (installed
// by run.py outside the checkout) and a look behind the front at spaced's own API, as its
// administrator on the Unix socket.
import http from 'node:http'
import { randomBytes } from 'node:crypto'

export const e2b = await import(process.env.SPACE_E2B_SDK + '/dist/index.mjs')
export const { Sandbox } = e2b

// spaced's answer to method path (JSON body) on the administrator's socket: {status, body}.
export function spaced (method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body))
    const req = http.request({ socketPath: process.env.SPACE_SOCKET, method, path,
      headers: data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {} }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        resolve({ status: res.statusCode, body: text ? JSON.parse(text) : null })
      })
    })
    req.on('error', reject)
    if (data) req.write(data)
    req.end()
  })
}

// A word no other test uses, for metadata that finds this test's sandboxes.
export function uniq () {
  return randomBytes(5).toString('hex')
}

// fn's first truthy answer, asked again every 200 ms until deadlineMs pass.
export async function poll (fn, what, deadlineMs = 90_000) {
  const end = Date.now() + deadlineMs
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

// Runs fn with a new sandbox (created with opts), killed afterwards whatever happens.
export async function withSandbox (opts, fn) {
  const sb = await Sandbox.create(opts)
  try {
    return await fn(sb)
  } finally {
    await Sandbox.kill(sb.sandboxId).catch(() => {})
  }
}
