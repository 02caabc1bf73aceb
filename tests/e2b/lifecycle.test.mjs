// tests/e2b/lifecycle.test.mjs - E2B's fork, snapshots and template look-ups through the
// unmodified SDK: Sandbox.fork / sandbox.fork(), createSnapshot, listSnapshots (filters, pages),
// deleteSnapshot, Sandbox.create(snapshotId), Template.exists and getTags, and the refusals
// (tag changes; another tenant's sandboxes and snapshots).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, poll, Sandbox, spaced, uniq, withSandbox } from './helpers.mjs'

const other = process.env.SPACE_OTHER_KEY

// The control plane asked as the SDK asks: {status, body}.
async function call (method, path, key = process.env.E2B_API_KEY) {
  const r = await fetch(process.env.E2B_API_URL + path, { method, headers: { 'X-API-KEY': key } })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : null, next: r.headers.get('x-next-token') }
}

async function killAll (sandboxes) {
  for (const s of sandboxes) if (s instanceof Sandbox) await Sandbox.kill(s.sandboxId).catch(() => {})
}

test('fork: the forks continue the parent (its files, its running process), then go their own ways', async () => {
  const word = uniq()
  await withSandbox({ timeoutMs: 300_000 }, async (parent) => {
    await parent.files.write('/home/user/seed', word)
    // a value only a running process holds: the file it came from is gone
    await parent.commands.run('v=$(cat /home/user/seed); rm /home/user/seed; while :; do echo "$v" > /home/user/echo; sleep 0.2; done',
      { background: true, timeoutMs: 0 })
    await poll(async () => (await parent.files.exists('/home/user/echo')), 'the parent\'s loop')
    const forks = await parent.fork({ count: 2, timeoutMs: 120_000 })
    try {
      assert.equal(forks.length, 2)
      const ids = new Set([parent.sandboxId])
      for (const f of forks) {
        assert.ok(f instanceof Sandbox, String(f))
        assert.ok(!ids.has(f.sandboxId))
        ids.add(f.sandboxId)
        const { body } = await spaced('GET', `/v1/sandboxes/${f.sandboxId}`)
        assert.equal(body.lifetime, 120) // the fork's deadline, not its parent's
        assert.equal(body.timeout, 0)
        const again = await Sandbox.connect(f.sandboxId, { timeoutMs: 60_000 })
        await again.files.remove('/home/user/echo')
        // the loop runs on in the fork and writes the word it kept in memory
        const echoed = await poll(async () => (await again.files.exists('/home/user/echo')) &&
          (await again.files.read('/home/user/echo')).trim(), 'the fork\'s loop')
        assert.equal(echoed, word)
        assert.equal(await again.files.exists('/home/user/seed'), false)
        const info = await again.getInfo()
        assert.equal(info.state, 'running')
        assert.equal(info.templateId, 'base')
      }
      // each has files of its own
      await forks[0].files.write('/home/user/only-here', 'x')
      assert.equal(await forks[1].files.exists('/home/user/only-here'), false)
      assert.equal(await parent.files.exists('/home/user/only-here'), false)
      assert.equal((await parent.getInfo()).state, 'running')
    } finally {
      await killAll(forks)
    }
  })
})

test('fork: one by default, with E2B\'s 15 s deadline; errors the SDK raises', async () => {
  await withSandbox({}, async (parent) => {
    const forks = await Sandbox.fork(parent.sandboxId)
    try {
      assert.equal(forks.length, 1)
      assert.ok(forks[0] instanceof Sandbox, String(forks[0]))
      const { body } = await spaced('GET', `/v1/sandboxes/${forks[0].sandboxId}`)
      assert.equal(body.lifetime, 15)
      assert.equal((await forks[0].commands.run('echo forked')).stdout, 'forked\n')
    } finally {
      await killAll(forks)
    }
    // another tenant's key does not find the sandbox
    await assert.rejects(Sandbox.fork(parent.sandboxId, { apiKey: other }), e2b.SandboxNotFoundError)
    await assert.rejects(parent.fork({ count: 17 }), (e) => e instanceof e2b.SandboxError && /400: count must be 1\.\.16/.test(e.message))
    await assert.rejects(parent.fork({ count: 'two' }), (e) => e instanceof e2b.SandboxError && /400: count must be a whole number/.test(e.message))
    await assert.rejects(parent.fork({ timeoutMs: 86_401_000 }), (e) => e instanceof e2b.SandboxError && /400: timeout must be whole seconds, 1\.\.86400/.test(e.message))
  })
  await assert.rejects(Sandbox.fork('000000000000'), e2b.SandboxNotFoundError)
})

test('snapshots: create, list, start from one, delete; a tenant sees only its own', async () => {
  const name = 'snap-' + uniq()
  let snap
  await withSandbox({}, async (sb) => {
    await sb.files.write('/home/user/kept', name)
    await sb.commands.run('sleep 4242', { background: true, timeoutMs: 0 })
    snap = await sb.createSnapshot({ name })
    assert.match(snap.snapshotId, /^s-[0-9a-f]{12}$/)
    assert.deepEqual(snap.names, [name])
    assert.equal((await sb.getInfo()).state, 'running') // it runs on once the snapshot is taken
    assert.deepEqual(await sb.listSnapshots().nextItems(), [snap])
    const plain = await Sandbox.createSnapshot(sb.sandboxId)
    assert.deepEqual(plain.names, [])
    assert.equal(await Sandbox.deleteSnapshot(plain.snapshotId), true)
  })
  try {
    assert.deepEqual(await Sandbox.listSnapshots({ name }).nextItems(), [snap])
    assert.deepEqual(await Sandbox.listSnapshots({ name: snap.snapshotId }).nextItems(), [snap])
    assert.deepEqual(await Sandbox.listSnapshots({ sandboxId: '000000000000' }).nextItems(), [])
    // the snapshot outlives its sandbox, and a create starts from it
    await withSandbox(snap.snapshotId, async (from) => {
      assert.equal((await from.files.read('/home/user/kept')), name)
      // its processes came along
      const ps = await from.commands.run('for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done')
      assert.ok(ps.stdout.split('\n').includes('sleep 4242 '), ps.stdout)
      const { body } = await spaced('GET', `/v1/sandboxes/${from.sandboxId}`)
      assert.equal(body.lifetime, 300)
    })
    // another tenant: not listed, not deleted, not started from
    const theirs = (await Sandbox.listSnapshots({ apiKey: other }).nextItems()).map((s) => s.snapshotId)
    assert.ok(!theirs.includes(snap.snapshotId))
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, { apiKey: other }), false)
    await assert.rejects(Sandbox.create(snap.snapshotId, { apiKey: other }), (e) => /404/.test(e.message))
    assert.equal(await e2b.Template.exists(snap.snapshotId, { apiKey: other }), false)
    assert.equal(await e2b.Template.exists(snap.snapshotId), true)
    assert.equal(await e2b.Template.exists(name), true)
  } finally {
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  }
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
  assert.equal(await Sandbox.deleteSnapshot('base'), false) // templates are not deleted here
  assert.deepEqual(await Sandbox.listSnapshots({ name }).nextItems(), [])
  await assert.rejects(Sandbox.create(snap.snapshotId), (e) => /404/.test(e.message))
  await assert.rejects(Sandbox.createSnapshot('000000000000'), e2b.SandboxNotFoundError)
})

test('listSnapshots: in pages that survive a delete; limit is 1..1000', async () => {
  const made = []
  await withSandbox({}, async (sb) => {
    try {
      for (let i = 0; i < 3; i++) made.push((await sb.createSnapshot()).snapshotId)
      const pages = sb.listSnapshots({ limit: 2 })
      const seen = []
      while (pages.hasNext) seen.push((await pages.nextItems()).map((s) => s.snapshotId))
      assert.deepEqual(seen.map((p) => p.length), [2, 1])
      assert.deepEqual([...seen.flat()].sort(), [...made].sort())
      // a page starts after its cursor even when the snapshot it names is gone
      const ones = sb.listSnapshots({ limit: 1 })
      const first = (await ones.nextItems())[0].snapshotId
      assert.equal(await Sandbox.deleteSnapshot(first), true)
      const rest = []
      while (ones.hasNext) rest.push(...(await ones.nextItems()).map((s) => s.snapshotId))
      assert.deepEqual([first, ...rest].sort(), [...made].sort())
      assert.equal((await call('GET', `/snapshots?sandboxID=${sb.sandboxId}&limit=1000`)).body.length, 2) // one was deleted above
      const one = await call('GET', `/snapshots?sandboxID=${sb.sandboxId}&limit=1`)
      assert.equal(one.body.length, 1)
      assert.ok(one.next)
      for (const bad of ['0', '1001', 'x', '']) {
        const r = await call('GET', `/snapshots?limit=${bad}`)
        assert.equal(r.status, 400, bad)
        assert.equal(r.body.code, 400)
      }
    } finally {
      for (const id of made) await Sandbox.deleteSnapshot(id).catch(() => {})
    }
  })
})

test('templates: exists and getTags from space\'s templates; tag changes are refused', async () => {
  assert.equal(await e2b.Template.exists('base'), true)
  assert.equal(await e2b.Template.exists('default'), true)
  assert.equal(await e2b.Template.exists('no-such-template-' + uniq()), false)
  const tags = await e2b.Template.getTags('base')
  assert.deepEqual(tags.map((t) => t.tag), ['latest'])
  assert.ok(tags[0].buildId)
  assert.ok(!isNaN(tags[0].createdAt.getTime()))
  await assert.rejects(e2b.Template.getTags('no-such-template'), (e) => e instanceof e2b.TemplateError && /404/.test(e.message))
  await assert.rejects(e2b.Template.assignTags('base:latest', 'production'),
    (e) => e instanceof e2b.TemplateError && /403: template tags/.test(e.message))
  await assert.rejects(e2b.Template.removeTags('base', 'production'),
    (e) => e instanceof e2b.TemplateError && /403: template tags/.test(e.message))
})
