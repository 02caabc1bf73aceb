// tests/e2b/surface.test.mjs - the rest of E2B's API surface through the unmodified SDK and its
// routes: refreshes (a deadline that only moves later), logs (refused, saying why), and what a
// create may ask that space does not have (volumes, IAM tokens, a pause without memory, the
// proxy's host masking), each refused with 400 before any sandbox is made.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, Sandbox, uniq, withSandbox } from './helpers.mjs'

const API = process.env.E2B_API_URL
const KEY = { 'X-API-KEY': process.env.E2B_API_KEY }

async function api (method, path, body) {
  const r = await fetch(API + path, { method, headers: { ...KEY, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : null }
}

const secondsLeft = async (sb) => ((await sb.getInfo()).endAt.getTime() - Date.now()) / 1000

test('POST /sandboxes/{id}/refreshes moves the deadline later, never earlier', async () => {
  await withSandbox({ timeoutMs: 30_000 }, async (sb) => {
    assert.ok(await secondsLeft(sb) <= 30)
    let r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`, { duration: 600 })
    assert.equal(r.status, 204)
    const left = await secondsLeft(sb)
    assert.ok(left > 500 && left <= 600, String(left))
    // a shorter one leaves it
    r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`, { duration: 10 })
    assert.equal(r.status, 204)
    assert.ok(await secondsLeft(sb) > 500)
    // an empty body is E2B's default timeout, 300 s: shorter than what is left, so nothing moves
    r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`)
    assert.equal(r.status, 204)
    assert.ok(await secondsLeft(sb) > 500)
    // the edges: 3600 is taken, 3601 and a non-number are not
    r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`, { duration: 3600 })
    assert.equal(r.status, 204)
    assert.ok(await secondsLeft(sb) > 3500)
    for (const duration of [3601, -1, '60']) {
      r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`, { duration })
      assert.equal(r.status, 400, JSON.stringify(duration))
      assert.match(r.body.message, /0\.\.3600/)
    }
    // a paused sandbox is not running: 404, and stays paused
    await sb.pause()
    r = await api('POST', `/sandboxes/${sb.sandboxId}/refreshes`, { duration: 60 })
    assert.equal(r.status, 404)
    assert.equal((await sb.getInfo()).state, 'paused')
  })
  const r = await api('POST', '/sandboxes/0123456789ab/refreshes', { duration: 60 })
  assert.equal(r.status, 404)
})

test('sandbox logs are refused with 501, saying why', async () => {
  await withSandbox({}, async (sb) => {
    for (const path of [`/sandboxes/${sb.sandboxId}/logs`, `/v2/sandboxes/${sb.sandboxId}/logs`]) {
      const r = await api('GET', path)
      assert.equal(r.status, 501, path)
      assert.match(r.body.message, /logs are not offered/)
    }
  })
})

test('what a create asks that space does not have is refused, and no sandbox is made', async () => {
  const word = uniq()
  const asks = [
    [{ volumeMounts: { '/data': 'vol' } }, /space has no volumes/],
    [{ lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } }, /keepMemory/],
    [{ network: { maskRequestHost: 'example.com' } }, /maskRequestHost/],
    [{ iam: { tokens: { t: { audience: 'a', tokenType: 'oidc' } } } }, /iam tokens/]
  ]
  for (const [opts, why] of asks) {
    await assert.rejects(Sandbox.create({ ...opts, metadata: { word } }), (e) => {
      assert.ok(e instanceof e2b.SandboxError, String(e))
      assert.match(e.message, why)
      return true
    }, JSON.stringify(opts))
  }
  assert.equal((await Sandbox.list({ query: { metadata: { word } } }).nextItems()).length, 0)
})

test('the rest of the SDK\'s methods do what docs/e2b.md says', async () => {
  await withSandbox({ metadata: { rest: '1' } }, async (sb) => {
    const full = await Sandbox.getFullInfo(sb.sandboxId)
    assert.equal(full.sandboxId, sb.sandboxId)
    assert.deepEqual(full.metadata, { rest: '1' })
    assert.equal(sb.commands.supportsStdinClose, true)
    // reads in every format; writeFiles is write of several
    await sb.files.writeFiles([{ path: 'one.txt', data: 'first' }, { path: '/tmp/two.txt', data: 'second' }])
    const stream = await sb.files.read('one.txt', { format: 'stream' })
    assert.equal(await new Response(stream).text(), 'first')
    assert.equal(await (await sb.files.read('/tmp/two.txt', { format: 'blob' })).text(), 'second')
    assert.equal(await sb.files.read('one.txt', { gzip: true }), 'first')
    // refused by the SDK itself, by the advertised envd version
    await assert.rejects(sb.files.write('m.txt', 'm', { metadata: { a: 'b' } }), e2b.TemplateError)
    await assert.rejects(sb.files.watchDir('/tmp', () => {}, { includeEntry: true }), e2b.TemplateError)
    // no MCP gateway; git needs a template that has it
    await assert.rejects(sb.getMcpToken(), e2b.FileNotFoundError)
    await assert.rejects(sb.git.init('/home/user/repo'), (e) => e instanceof e2b.CommandExitError && e.exitCode === 127)
    // betaPause is pause: true once, false when already paused; the static one too
    assert.equal(await sb.betaPause(), true)
    assert.equal((await sb.getInfo()).state, 'paused')
    assert.equal(await Sandbox.betaPause(sb.sandboxId), false)
    await Sandbox.connect(sb.sandboxId)
    assert.equal(await sb.isRunning(), true)
  })
  // volumes and secrets: not offered
  await assert.rejects(e2b.Volume.list(), (e) => e instanceof e2b.VolumeError && /404/.test(e.message))
  await assert.rejects(e2b.Secret.list().nextItems(), (e) => e instanceof e2b.SecretError && /404/.test(e.message))
})
