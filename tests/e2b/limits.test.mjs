// tests/e2b/limits.test.mjs - the E2B front's limits at their edges: 512 connections from one
// address (GW_MAX_PER_IP) and a body of 1 MiB (GW_MAX_BODY).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { Sandbox, spaced } from './helpers.mjs'

const url = new URL(process.env.E2B_API_URL)

// A connection that is open once the front has taken it: resolves with the socket, or with
// null when the front closes it without a word.
function connection () {
  return new Promise((resolve) => {
    const s = net.connect(Number(url.port), url.hostname)
    let settled = false
    s.on('error', () => { if (!settled) { settled = true; resolve(null) } })
    s.on('close', () => { if (!settled) { settled = true; resolve(null) } })
    s.on('connect', () => {
      // an HTTP request that is never finished: the front holds the connection (and a thread)
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n')
      setImmediate(() => { if (!settled) { settled = true; resolve(s) } })
    })
  })
}

test('one address holds 512 connections; the 513th is closed; then all is served again', async () => {
  const held = []
  try {
    for (let i = 0; i < 512; i++) {
      const s = await connection()
      assert.ok(s, `connection ${i + 1} was refused`)
      held.push(s)
    }
    const over = await new Promise((resolve) => {
      const s = net.connect(Number(url.port), url.hostname)
      s.on('connect', () => s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'))
      let data = ''
      s.on('data', (d) => { data += d })
      s.on('close', () => resolve(data))
      s.on('error', () => {})
    })
    assert.equal(over, '', 'the 513th connection got an answer')
  } finally {
    for (const s of held) s.destroy()
  }
  // the front serves again once they are gone (their threads end as they close)
  const t0 = Date.now()
  let ok = false
  while (!ok && Date.now() - t0 < 60_000) {
    ok = await fetch(`${url.origin}/health`).then((r) => r.status === 200, () => false)
  }
  assert.ok(ok)
})

test('a body of 1 MiB is read; one byte more is 413', async () => {
  const sb = await Sandbox.create()
  try {
    const token = (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.access_token
    const headers = { 'E2b-Sandbox-Id': sb.sandboxId, 'X-Access-Token': token, 'Content-Type': 'application/json',
      'Connect-Protocol-Version': '1' }
    const fill = (n) => '{"path":"' + 'a'.repeat(n - 11) + '"}'
    let r = await fetch(`${process.env.E2B_SANDBOX_URL}/filesystem.Filesystem/Stat`,
      { method: 'POST', headers, body: fill(1 << 20) })
    assert.equal(r.status, 400) // read, and refused for its path (over 4096 bytes), not its size
    assert.equal((await r.json()).code, 'invalid_argument')
    r = await fetch(`${process.env.E2B_SANDBOX_URL}/filesystem.Filesystem/Stat`,
      { method: 'POST', headers, body: fill((1 << 20) + 1) })
    assert.equal(r.status, 413)
    assert.equal((await r.json()).code, 413)
  } finally {
    await sb.kill()
  }
})
