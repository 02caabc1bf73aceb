// tests/e2b/control.test.mjs - E2B's control plane through the unmodified SDK: create, getInfo,
// list (metadata and state filters, pages), setTimeout, pause, connect, kill, and the errors
// the SDK turns into its own classes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, Sandbox, spaced, uniq, withSandbox } from './helpers.mjs'

test('create gives a running sandbox with its metadata, template and deadline', async () => {
  const who = uniq()
  const before = Date.now()
  await withSandbox({ metadata: { who }, timeoutMs: 120_000 }, async (sb) => {
    assert.match(sb.sandboxId, /^[0-9a-f]{12}$/)
    const info = await sb.getInfo()
    assert.equal(info.sandboxId, sb.sandboxId)
    assert.equal(info.templateId, 'base')
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { who })
    assert.equal(info.cpuCount, 1)
    assert.equal(info.memoryMB, 512)
    assert.ok(info.endAt.getTime() >= before + 118_000 && info.endAt.getTime() <= Date.now() + 121_000, info.endAt)
    assert.equal(await sb.isRunning(), true)
    // behind the front: a lifetime without an idle timeout, killed when it passes
    const { body } = await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)
    assert.equal(body.timeout, 0)
    assert.equal(body.lifetime, 120)
    assert.equal(body.timeout_action, 'kill')
    assert.equal(body.metadata.who, who)
  })
})

test('a create with no timeout gets 300 s; autoPause makes it suspend instead', async () => {
  await withSandbox({ lifecycle: { onTimeout: 'pause' } }, async (sb) => {
    const { body } = await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)
    assert.equal(body.lifetime, 300)
    assert.equal(body.timeout_action, 'suspend')
    assert.equal((await sb.getInfo()).lifecycle.onTimeout, 'pause')
  })
})

test('list filters by metadata (with characters that need escaping) and by state, in pages', async () => {
  const tag = uniq()
  const made = []
  try {
    for (let i = 0; i < 3; i++) made.push(await Sandbox.create({ metadata: { tag, odd: 'a b&c=d/é', n: String(i) } }))
    const mine = async (query, limit) => {
      const seen = []
      const pages = Sandbox.list({ query, limit })
      while (pages.hasNext) seen.push((await pages.nextItems()).map((s) => s.sandboxId))
      return seen
    }
    let pages = await mine({ metadata: { tag, odd: 'a b&c=d/é' } }, 2)
    assert.deepEqual(pages.map((p) => p.length), [2, 1])
    // newest first, every one once
    assert.deepEqual(pages.flat(), made.map((s) => s.sandboxId).reverse())
    pages = await mine({ metadata: { tag, n: '1' } })
    assert.deepEqual(pages.flat(), [made[1].sandboxId])
    assert.deepEqual((await mine({ metadata: { tag, odd: 'a b' } })).flat(), [])

    await made[0].pause()
    assert.deepEqual((await mine({ metadata: { tag }, state: ['paused'] })).flat(), [made[0].sandboxId])
    assert.deepEqual((await mine({ metadata: { tag }, state: ['running'] })).flat().sort(),
      [made[1].sandboxId, made[2].sandboxId].sort())
  } finally {
    for (const sb of made) await Sandbox.kill(sb.sandboxId).catch(() => {})
  }
})

test('setTimeout moves the deadline from now, either way', async () => {
  await withSandbox({ timeoutMs: 60_000 }, async (sb) => {
    await sb.setTimeout(900_000)
    let end = (await sb.getInfo()).endAt.getTime()
    assert.ok(end > Date.now() + 890_000 && end <= Date.now() + 901_000, new Date(end))
    await Sandbox.setTimeout(sb.sandboxId, 30_000)
    end = (await sb.getInfo()).endAt.getTime()
    assert.ok(end <= Date.now() + 31_000, new Date(end))
  })
})

test('a deadline that passes kills the sandbox, busy or not', async () => {
  const sb = await Sandbox.create({ timeoutMs: 2_000 })
  const id = sb.sandboxId
  const t0 = Date.now()
  while (Date.now() - t0 < 60_000) {
    const { status } = await spaced('GET', `/v1/sandboxes/${id}`)
    if (status === 404) break
    await spaced('POST', `/v1/sandboxes/${id}/exec`, { cmd: ['true'] }) // activity does not extend it
  }
  assert.equal((await spaced('GET', `/v1/sandboxes/${id}`)).status, 404)
  await assert.rejects(Sandbox.getInfo(id), e2b.SandboxNotFoundError)
})

test('pause keeps it (suspended), a second pause is false, connect resumes it', async () => {
  await withSandbox({}, async (sb) => {
    assert.equal(await sb.pause(), true)
    assert.equal((await sb.getInfo()).state, 'paused')
    assert.equal((await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.state, 'suspended')
    assert.equal(await Sandbox.pause(sb.sandboxId), false)
    assert.equal(await sb.isRunning(), false)
    const again = await Sandbox.connect(sb.sandboxId, { timeoutMs: 600_000 })
    assert.equal(again.sandboxId, sb.sandboxId)
    const info = await again.getInfo()
    assert.equal(info.state, 'running')
    assert.ok(info.endAt.getTime() > Date.now() + 590_000)
    assert.equal(await again.isRunning(), true)
    // connect to a running one only moves the deadline later
    await Sandbox.connect(sb.sandboxId, { timeoutMs: 10_000 })
    assert.ok((await again.getInfo()).endAt.getTime() > Date.now() + 590_000)
  })
})

test('kill is true once, then false; what is gone is not found', async () => {
  const sb = await Sandbox.create()
  assert.equal(await sb.kill(), true)
  assert.equal(await Sandbox.kill(sb.sandboxId), false)
  await assert.rejects(Sandbox.getInfo(sb.sandboxId), e2b.SandboxNotFoundError)
  await assert.rejects(Sandbox.connect(sb.sandboxId), e2b.SandboxNotFoundError)
  await assert.rejects(Sandbox.setTimeout(sb.sandboxId, 10_000), e2b.SandboxNotFoundError)
  await assert.rejects(Sandbox.pause(sb.sandboxId), e2b.SandboxNotFoundError)
  assert.equal(await sb.isRunning(), false)
})

test('a key that is not a token is refused; another tenant sees nothing of ours', async () => {
  await assert.rejects(Sandbox.create({ apiKey: 'sp_0000' }), e2b.AuthenticationError)
  await assert.rejects(Sandbox.list({ apiKey: 'e2b_0000' }).nextItems(), e2b.AuthenticationError)
  await withSandbox({}, async (sb) => {
    // the administrator makes a token of another tenant
    const other = process.env.SPACE_OTHER_KEY
    assert.ok(other)
    await assert.rejects(Sandbox.getInfo(sb.sandboxId, { apiKey: other }), e2b.SandboxNotFoundError)
    assert.equal(await Sandbox.kill(sb.sandboxId, { apiKey: other }), false)
    assert.deepEqual((await Sandbox.list({ apiKey: other }).nextItems()).map((s) => s.sandboxId), [])
  })
})
