// tests/e2b/control.test.mjs - E2B's control plane through the unmodified SDK: create, getInfo,
// list (metadata and state filters, pages), setTimeout, pause, connect, autoResume, getMetrics,
// getHost, kill, and the errors the SDK turns into its own classes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { e2b, poll, Sandbox, spaced, uniq, withSandbox } from './helpers.mjs'

const MIB = 1 << 20

// GET http://<host>/<path> with every name resolved to loopback (as browsers do *.localhost):
// {status, body}.
function get (url, headers = {}) {
  const lookup = (name, opts, cb) => opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }])
    : cb(null, '127.0.0.1', 4)
  return new Promise((resolve, reject) => {
    http.get(url, { lookup, headers, agent: false }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }))
    }).on('error', reject)
  })
}

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

test('getMetrics: the samples spaced took, memory and disk used growing, totals of the sandbox', async () => {
  await withSandbox({}, async (sb) => {
    // once memory used holds still between two samples (a microVM's falls for a while after its start)
    const first = await poll(async () => {
      const m = await sb.getMetrics()
      return m.length >= 2 && Math.abs(m.at(-1).memUsed - m.at(-2).memUsed) < 16 * MIB && m.at(-1)
    }, 'memory used to hold still', 180_000)
    const { body } = await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)
    assert.ok(first.timestamp instanceof Date && !Number.isNaN(first.timestamp.getTime()), first.timestamp)
    assert.equal(first.cpuCount, 1)
    assert.equal(first.memTotal, body.memory_mb * MIB)
    assert.equal(first.diskTotal, body.disk_mb * MIB)
    assert.ok(first.memUsed > 0 && first.diskUsed > 0 && first.cpuUsedPct >= 0, JSON.stringify(first))

    await sb.commands.run(`python3 -c "import time; b = b'x' * (200 << 20); open('/tmp/held', 'w'); time.sleep(3600)"`,
      { background: true })
    await poll(async () => (await sb.getMetrics()).at(-1)?.memUsed >= first.memUsed + 150 * MIB,
      'memory used to grow by the 200 MiB held')
    await sb.commands.run('head -c 100M /dev/urandom > /home/user/big && sync')
    await poll(async () => (await sb.getMetrics()).at(-1)?.diskUsed >= first.diskUsed + 80 * MIB,
      'disk used to grow by the 100 MiB file')

    // a range: none after an hour from now, none before 1970's first second, the first one from it
    assert.deepEqual(await sb.getMetrics({ start: new Date(Date.now() + 3_600_000) }), [])
    assert.deepEqual(await Sandbox.getMetrics(sb.sandboxId, { end: new Date(1000) }), [])
    const since = await sb.getMetrics({ start: first.timestamp })
    assert.equal(since[0].timestamp.getTime(), first.timestamp.getTime())

    // several sandboxes at once (GET /sandboxes/metrics): the newest sample of each
    const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/metrics?sandbox_ids=${sb.sandboxId},000000000000`,
      { headers: { 'X-API-KEY': process.env.E2B_API_KEY } })
    assert.equal(r.status, 200)
    const many = (await r.json()).sandboxes
    assert.deepEqual(Object.keys(many), [sb.sandboxId])
    assert.equal(many[sb.sandboxId].memTotal, first.memTotal)

    // paused: the samples of when it ran, and asking does not resume it
    await sb.pause()
    assert.ok((await sb.getMetrics()).length > 0)
    assert.equal((await sb.getInfo()).state, 'paused')
  })
  await assert.rejects(Sandbox.getMetrics('000000000000'), e2b.SandboxNotFoundError)
})

test('getHost(port) reaches a server in the sandbox through spaced\'s port proxy', async () => {
  await withSandbox({}, async (sb) => {
    await sb.files.write('/home/user/hello.txt', 'hello from inside')
    await sb.commands.run('python3 -m http.server 8000 --directory /home/user', { background: true })
    const host = sb.getHost(8000)
    assert.match(host, new RegExp(`^8000-${sb.sandboxId}\\.localhost:\\d+$`))
    assert.equal((await sb.getInfo()).sandboxDomain, host.slice(`8000-${sb.sandboxId}.`.length))
    const r = await poll(async () => { const x = await get(`http://${host}/hello.txt`); return x.status === 200 && x },
      'the server to answer through the proxy')
    assert.equal(r.body, 'hello from inside')
    assert.equal(sb.trafficAccessToken, undefined) // public, as E2B's are unless asked otherwise
  })
  // allowPublicTraffic: false: the port needs the sandbox's traffic token, as in E2B
  await withSandbox({ network: { allowPublicTraffic: false } }, async (sb) => {
    await sb.commands.run('python3 -m http.server 8001 --directory /home/user', { background: true })
    const url = `http://${sb.getHost(8001)}/`
    assert.ok(sb.trafficAccessToken)
    assert.equal((await get(url)).status, 401)
    await poll(async () => (await get(url, { 'e2b-traffic-access-token': sb.trafficAccessToken })).status === 200,
      'the server to answer the token')
    assert.equal((await sb.getInfo()).network.allowPublicTraffic, false)

    // the traffic token opens ports and nothing else; the access token opens no port
    const mine = (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body
    assert.equal(sb.trafficAccessToken, mine.traffic_token)
    assert.notEqual(mine.traffic_token, mine.access_token)
    assert.equal((await get(url, { 'e2b-traffic-access-token': mine.access_token })).status, 403)
    const plane = (path, token, init = {}) => fetch(`${process.env.E2B_SANDBOX_URL}${path}`, { ...init,
      headers: { ...init.headers, 'E2b-Sandbox-Id': sb.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token } })
    const list = { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' } }
    const ghost = await (await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/etc/hostname`,
      { headers: { 'E2b-Sandbox-Id': '0123456789ab', 'X-Access-Token': mine.traffic_token } })).json()
    for (const [path, init] of [['/files?path=/etc/hostname', {}], ['/process.Process/List', list]]) {
      const r = await plane(path, mine.traffic_token, init)
      assert.equal(r.status, 502, path) // as for a sandbox that is not there
      assert.equal((await r.json()).message, ghost.message, path)
      assert.equal((await plane(path, mine.access_token, init)).status, 200, path)
    }
  })
})

test('egress: allowInternetAccess and network.allowOut/denyOut become space\'s policy; what it cannot honour is 400', async () => {
  const policy = async (sb) => (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.network
  await withSandbox({ allowInternetAccess: false }, async (sb) => {
    assert.deepEqual(await policy(sb), { ...(await policy(sb)), egress: 'none', allow: [], deny: [] })
    assert.equal((await sb.getInfo()).allowInternetAccess, false)
    // a connect inside fails at once (refused), and never leaves the machine
    const r = await sb.commands.run('python3 -c "import socket; socket.create_connection((\'192.0.2.1\', 80), timeout=20)"')
      .catch((e) => e)
    assert.notEqual(r.exitCode, 0)
    assert.match(r.stderr, /ConnectionRefusedError|Network is unreachable|No route to host/)
  })
  await withSandbox({ allowInternetAccess: false, network: { allowOut: ['192.0.2.7'] } }, async (sb) => {
    const p = await policy(sb)
    assert.equal(p.egress, 'allow')
    assert.deepEqual(p.allow, ['192.0.2.7'])
    const info = await sb.getInfo()
    assert.deepEqual([info.network.allowOut, info.network.denyOut], [['192.0.2.7'], ['0.0.0.0/0']])
  })
  await withSandbox({ network: { denyOut: [e2b.ALL_TRAFFIC], allowOut: ['198.51.100.0/24', 'example.com'] } }, async (sb) => {
    const p = await policy(sb)
    assert.equal(p.egress, 'allow')
    assert.deepEqual(p.allow, ['198.51.100.0/24', 'example.com'])
  })
  await withSandbox({ network: { denyOut: ['203.0.113.9'] } }, async (sb) => {
    assert.deepEqual((await policy(sb)).deny, ['203.0.113.9'])
    // updateNetwork maps the same
    await sb.updateNetwork({ allowInternetAccess: false })
    assert.equal((await policy(sb)).egress, 'none')
    await sb.updateNetwork({ denyOut: [e2b.ALL_TRAFFIC], allowOut: ['192.0.2.8'] })
    assert.deepEqual([(await policy(sb)).egress, (await policy(sb)).allow], ['allow', ['192.0.2.8']])
    await assert.rejects(sb.updateNetwork({ denyOut: ['192.0.2.0/24'], allowOut: ['192.0.2.8'] }), /400/)
    assert.deepEqual((await policy(sb)).allow, ['192.0.2.8']) // unchanged by the refusal
  })
  const before = (await spaced('GET', '/v1/sandboxes')).body.sandboxes.length
  // allowOut as exceptions to a partial denyOut, and an egress proxy: not offered, so refused
  await assert.rejects(Sandbox.create({ network: { denyOut: ['192.0.2.0/24'], allowOut: ['192.0.2.8'] } }), /400/)
  await assert.rejects(Sandbox.create({ network: { egressProxy: { address: '192.0.2.1:1080' } } }), /400.*egressProxy/)
  await assert.rejects(Sandbox.create({ network: { denyOut: ['not an address!'] } }), /400/)
  assert.equal((await spaced('GET', '/v1/sandboxes')).body.sandboxes.length, before)
})

test('autoResume: a paused sandbox made with it is resumed by a command; one made without stays paused', async () => {
  await withSandbox({ lifecycle: { onTimeout: 'pause', autoResume: true } }, async (sb) => {
    assert.equal((await sb.getInfo()).lifecycle.autoResume, true)
    assert.equal((await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.auto_resume, true)
    await sb.files.write('/home/user/kept.txt', 'kept')
    assert.equal(await sb.pause(), true)
    const r = await sb.commands.run('cat /home/user/kept.txt')
    assert.equal(r.stdout, 'kept')
    assert.equal((await sb.getInfo()).state, 'running')
  })
  await withSandbox({ lifecycle: { onTimeout: 'pause' } }, async (sb) => {
    assert.equal((await sb.getInfo()).lifecycle.autoResume, false)
    assert.equal((await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.auto_resume, false)
    assert.equal(await sb.pause(), true)
    await assert.rejects(sb.commands.run('true', { requestTimeoutMs: 30_000 }))
    await assert.rejects(sb.files.read('/etc/hostname'))
    assert.equal((await sb.getInfo()).state, 'paused')
    assert.equal(await sb.isRunning(), false)
    assert.equal((await get(`http://${sb.getHost(8000)}/`)).status, 503) // nor does traffic to its ports
    await Sandbox.connect(sb.sandboxId) // resumed when asked
    assert.equal((await sb.commands.run('echo up')).stdout, 'up\n')
  })
})

test('metrics: bad bounds, and more sandboxes at once than the front takes, are 400', async () => {
  const ask = (q) => fetch(`${process.env.E2B_API_URL}${q}`, { headers: { 'X-API-KEY': process.env.E2B_API_KEY } })
  await withSandbox({}, async (sb) => {
    for (const bad of ['start=abc', 'end=-1', `start=${'9'.repeat(200)}`]) {
      const r = await ask(`/sandboxes/${sb.sandboxId}/metrics?${bad}`)
      assert.equal(r.status, 400, bad)
      assert.equal((await r.json()).code, 400)
    }
  })
  const ids = (n) => Array.from({ length: n }, (_, i) => i.toString(16).padStart(12, '0')).join(',')
  assert.equal((await ask(`/sandboxes/metrics?sandbox_ids=${ids(100)}`)).status, 200) // GW_METRICS_IDS_MAX
  assert.equal((await ask(`/sandboxes/metrics?sandbox_ids=${ids(101)}`)).status, 400)
  assert.equal((await ask('/sandboxes/metrics')).status, 400)
})
