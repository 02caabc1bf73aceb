// tests/e2b/limits.test.mjs - the E2B front's limits at their edges: connections from one
// address (GW_MAX_PER_IP), unauthenticated ones (GW_MAX_UNAUTH_PER_IP, GW_MAX_UNAUTH,
// GW_UNAUTH_IDLE_S), credentials checked before a body is read, and a body of 1 MiB
// (GW_MAX_BODY).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { Sandbox, spaced, withSandbox } from './helpers.mjs'

const url = new URL(process.env.E2B_API_URL)

// The front's numbers (e2b/gateway.h, docs/e2b.md).
const MAX_PER_IP = 256 // GW_MAX_PER_IP
const MAX_UNAUTH_PER_IP = 32 // GW_MAX_UNAUTH_PER_IP
const MAX_UNAUTH = 256 // GW_MAX_UNAUTH
const UNAUTH_IDLE_S = 10 // GW_UNAUTH_IDLE_S

// A connection from address `from` that is open once the front has taken it: resolves with the
// socket, or with null when the front closes it without a word. `head` is written at once.
function connection (from = '127.0.0.1', head = 'GET /health HTTP/1.1\r\nHost: x\r\n') {
  return new Promise((resolve) => {
    const s = net.connect({ port: Number(url.port), host: url.hostname, localAddress: from })
    let settled = false
    s.received = '' // what came back, read as it comes (answerHead)
    s.on('data', (d) => { s.received += d; s.emit('received') })
    s.on('error', () => { if (!settled) { settled = true; resolve(null) } })
    // closed before a word: not taken; closed after an answer: taken, and answered
    s.on('close', () => { s.ended = true; if (!settled) { settled = true; resolve(s.received ? s : null) } })
    s.on('connect', () => {
      s.write(head)
      setImmediate(() => { if (!settled) { settled = true; resolve(s) } })
    })
  })
}

// Whether a connection from `from` is closed by the front without a word (not taken).
async function refused (from) {
  const s = await connection(from)
  if (!s) return true
  await answerHead(s, 5_000) // well inside GW_UNAUTH_IDLE_S: a connection taken is not closed yet
  s.destroy()
  return s.ended && s.received === ''
}

// What comes back on s until its first answer's head is whole, or the socket ends: the text.
function answerHead (s, deadlineMs = 30_000) {
  return new Promise((resolve) => {
    const whole = () => s.received.includes('\r\n\r\n') || s.ended
    if (whole()) return resolve(s.received)
    const done = () => { clearTimeout(timer); s.off('received', check); s.off('close', done); resolve(s.received) }
    const check = () => { if (whole()) done() }
    const timer = setTimeout(done, deadlineMs)
    s.on('received', check)
    s.on('close', done)
  })
}

// A connection from `from` that asks one request of the sandbox plane (sandbox sb, its access
// token) and keeps the connection: resolves with the socket once the answer came, or null.
async function authenticated (sb, token, from = '127.0.0.1') {
  const s = await connection(from, `GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sb}\r\n` +
    `X-Access-Token: ${token}\r\n\r\n`)
  if (!s) return null
  const head = await answerHead(s)
  return head.startsWith('HTTP/1.1 204') ? s : null
}

// Whether a new connection from `from` is served (E2B's API's health).
async function served (from) {
  const s = await connection(from, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  if (!s) return false
  const head = await answerHead(s)
  s.destroy()
  return head.startsWith('HTTP/1.1 200')
}

test('credentials are checked on the head: a bad key or token with a 1 MiB body is refused unread', async () => {
  await withSandbox({}, async (sb) => {
    const cases = [
      ['POST /v2/sandboxes', 'X-API-KEY: sp_0123456789abcdef', '401'],
      ['POST /v2/sandboxes', '', '401'],
      ['POST /files?path=/tmp/x', `E2b-Sandbox-Id: ${sb.sandboxId}\r\nX-Access-Token: not-it`, '502'],
      ['POST /files?path=/tmp/x', 'E2b-Sandbox-Id: 0123456789ab\r\nX-Access-Token: not-it', '502']
    ]
    for (const [line, hdrs, status] of cases) {
      // only the head is sent: the answer can only come from it
      const s = await connection('127.0.0.1', `${line} HTTP/1.1\r\nHost: x\r\n${hdrs ? hdrs + '\r\n' : ''}` +
        'Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n')
      assert.ok(s, line)
      const head = await answerHead(s)
      s.destroy()
      assert.ok(head.startsWith(`HTTP/1.1 ${status}`), `${line} ${hdrs}: ${JSON.stringify(head)}`)
    }
  })
})

test('a sandbox that is not there is answered as one whose token is wrong', async () => {
  await withSandbox({}, async (sb) => {
    const ask = async (id, token) => {
      const r = await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/etc/hostname`,
        { headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token } })
      const body = await r.json()
      delete body.sandboxId // the id asked for, echoed
      return [r.status, body]
    }
    const wrong = await ask(sb.sandboxId, 'not-it')
    assert.deepEqual(await ask('0123456789ab', 'not-it'), wrong)
    assert.deepEqual(await ask('0123456789ab', ''), wrong)
    assert.equal(wrong[0], 502)
  })
})

test(`unauthenticated: ${MAX_UNAUTH_PER_IP} connections from one address, ${MAX_UNAUTH} in all; others still served`, async () => {
  const held = []
  try {
    for (let i = 0; i < MAX_UNAUTH_PER_IP; i++) {
      const s = await connection('127.0.0.1')
      assert.ok(s, `connection ${i + 1} was refused`)
      held.push(s)
    }
    assert.ok(await refused('127.0.0.1'), `unauthenticated connection ${MAX_UNAUTH_PER_IP + 1} was taken`)
    assert.equal(await served('127.0.0.2'), true, 'another address was not served')
    // the front-wide limit: seven more addresses fill it, and then no address gets in
    for (let a = 1; held.length < MAX_UNAUTH; a++) {
      for (let i = 0; i < MAX_UNAUTH_PER_IP && held.length < MAX_UNAUTH; i++) {
        const s = await connection(`127.0.1.${a}`)
        assert.ok(s, `connection ${held.length + 1} (from 127.0.1.${a}) was refused`)
        held.push(s)
      }
    }
    assert.ok(await refused('127.0.2.1'), `unauthenticated connection ${MAX_UNAUTH + 1} was taken`)
  } finally {
    for (const s of held) s.destroy()
  }
  const t0 = Date.now()
  let ok = false
  while (!ok && Date.now() - t0 < 60_000) ok = await served('127.0.0.1')
  assert.ok(ok, 'the address was not served again once its connections were gone')
})

test(`an unauthenticated connection is closed after ${UNAUTH_IDLE_S} s of silence; an authenticated one is not`, async () => {
  await withSandbox({}, async (sb) => {
    const token = (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.access_token
    const idle = await connection('127.0.0.1', '')
    const mine = await authenticated(sb.sandboxId, token)
    assert.ok(idle && mine)
    // closed well before the authenticated limit (600 s): the deadline of this wait
    const closed = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 6 * UNAUTH_IDLE_S * 1000)
      idle.on('close', () => { clearTimeout(timer); resolve(true) })
    })
    assert.ok(closed, 'the silent unauthenticated connection was kept')
    // the authenticated one, as silent for as long, still answers
    mine.received = ''
    mine.write(`GET /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sb.sandboxId}\r\nX-Access-Token: ${token}\r\n\r\n`)
    const head = await answerHead(mine)
    mine.destroy()
    assert.ok(head.startsWith('HTTP/1.1 204'), JSON.stringify(head))
  })
})

test(`one address holds ${MAX_PER_IP} connections; the next is closed; another address is served`, async () => {
  await withSandbox({}, async (sb) => {
    const token = (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.access_token
    const held = []
    try {
      // addresses of their own: the SDK's pooled connections come from 127.0.0.1
      for (let i = 0; i < MAX_PER_IP; i++) {
        const s = await authenticated(sb.sandboxId, token, '127.0.0.5')
        assert.ok(s, `connection ${i + 1} was refused`)
        held.push(s)
      }
      assert.equal(await authenticated(sb.sandboxId, token, '127.0.0.5'), null, `connection ${MAX_PER_IP + 1} was served`)
      // two addresses at their limit hold half of the front: a third is served
      for (let i = 0; i < MAX_PER_IP; i++) {
        const s = await authenticated(sb.sandboxId, token, '127.0.0.6')
        assert.ok(s, `connection ${i + 1} from 127.0.0.6 was refused`)
        held.push(s)
      }
      assert.equal(await served('127.0.0.7'), true)
    } finally {
      for (const s of held) s.destroy()
    }
  })
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
