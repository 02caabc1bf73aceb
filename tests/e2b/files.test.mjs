// tests/e2b/files.test.mjs - files through the unmodified SDK: read and write (one file, several,
// 1 MiB of binary, empty), exists, getInfo, list with depth, makeDir, rename, remove, watchDir,
// the errors the SDK raises; owners, groups, link targets and sub-second times of entries; files
// written, read and listed as the user `user`; the polling watchers (CreateWatcher,
// GetWatcherEvents, RemoveWatcher) as E2B's Python SDK calls them; and the sandbox plane's guard:
// a sandbox's access token (502 without it, as for one that is gone).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, Sandbox, spaced, withSandbox } from './helpers.mjs'

let sb
before(async () => { sb = await Sandbox.create() })
after(async () => { await sb.kill() })

test('write and read back: text, 1 MiB of every byte value, an empty file, parents made', async () => {
  const w = await sb.files.write('/tmp/f/a/b/x.txt', 'hello é')
  assert.deepEqual([w.name, w.type, w.path], ['x.txt', 'file', '/tmp/f/a/b/x.txt'])
  assert.equal(await sb.files.read('/tmp/f/a/b/x.txt'), 'hello é')
  const big = Buffer.alloc(1 << 20)
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 11)) & 255
  await sb.files.write('/tmp/f/big.bin', big)
  const back = Buffer.from(await sb.files.read('/tmp/f/big.bin', { format: 'bytes' }))
  assert.equal(back.length, big.length)
  assert.ok(back.equals(big))
  assert.equal((await sb.commands.run('sha256sum < /tmp/f/big.bin')).stdout.split(' ')[0],
    (await import('node:crypto')).createHash('sha256').update(big).digest('hex'))
  await sb.files.write('/tmp/f/empty', '')
  assert.equal(await sb.files.read('/tmp/f/empty'), '')
  // an existing file is replaced
  await sb.files.write('/tmp/f/a/b/x.txt', 'new')
  assert.equal(await sb.files.read('/tmp/f/a/b/x.txt'), 'new')
})

test('several files in one write; a relative path is taken from the default user\'s home', async () => {
  const w = await sb.files.write([{ path: '/tmp/g/one', data: '1' }, { path: 'rel/two.txt', data: '2' },
    { path: '/tmp/g/quote"d name', data: '3' }])
  assert.deepEqual(w.map((x) => x.path), ['/tmp/g/one', '/home/user/rel/two.txt', '/tmp/g/quote"d name'])
  assert.equal((await sb.commands.run('cat /tmp/g/one /home/user/rel/two.txt "/tmp/g/quote\\"d name"')).stdout, '123')
  assert.equal(await sb.files.read('rel/two.txt'), '2')
  await sb.files.remove('rel')
})

test('reading what is missing or a folder is an error of the right class', async () => {
  await assert.rejects(sb.files.read('/tmp/no/such/file'), e2b.FileNotFoundError)
  await assert.rejects(sb.files.read('/tmp'), e2b.InvalidArgumentError)
})

test('exists, getInfo and list (depth 1 and 2)', async () => {
  await sb.files.write([{ path: '/tmp/h/top.txt', data: 'abc' }, { path: '/tmp/h/sub/deep.txt', data: 'd' }])
  assert.equal(await sb.files.exists('/tmp/h/top.txt'), true)
  assert.equal(await sb.files.exists('/tmp/h/nothing'), false)
  const info = await sb.files.getInfo('/tmp/h/top.txt')
  assert.equal(info.name, 'top.txt')
  assert.equal(info.type, 'file')
  assert.equal(info.path, '/tmp/h/top.txt')
  assert.equal(info.size, 3)
  assert.equal(info.mode, 0o644)
  assert.equal(info.permissions, '-rw-r--r--')
  assert.ok(Math.abs(info.modifiedTime.getTime() - Date.now()) < 120_000, info.modifiedTime)
  assert.equal((await sb.files.getInfo('/tmp/h/sub')).type, 'dir')
  await assert.rejects(sb.files.getInfo('/tmp/h/nothing'), e2b.FileNotFoundError)

  const one = (await sb.files.list('/tmp/h')).map((e) => [e.path, e.type])
  assert.deepEqual(one, [['/tmp/h/sub', 'dir'], ['/tmp/h/top.txt', 'file']])
  const two = (await sb.files.list('/tmp/h', { depth: 2 })).map((e) => e.path)
  assert.deepEqual(two, ['/tmp/h/sub', '/tmp/h/sub/deep.txt', '/tmp/h/top.txt'])
  await assert.rejects(sb.files.list('/tmp/h/nothing'), e2b.FileNotFoundError)
  await assert.rejects(sb.files.list('/tmp/h/top.txt'), e2b.InvalidArgumentError)
})

test('makeDir, rename (parents made) and remove (a missing path is no error)', async () => {
  assert.equal(await sb.files.makeDir('/tmp/k/l/m'), true)
  assert.equal(await sb.files.makeDir('/tmp/k/l/m'), false)
  await sb.files.write('/tmp/k/file', 'x')
  await assert.rejects(sb.files.makeDir('/tmp/k/file'), e2b.InvalidArgumentError)
  const moved = await sb.files.rename('/tmp/k/file', '/tmp/k2/new/place.txt')
  assert.equal(moved.path, '/tmp/k2/new/place.txt')
  assert.equal(moved.type, 'file')
  assert.equal(await sb.files.read('/tmp/k2/new/place.txt'), 'x')
  await assert.rejects(sb.files.rename('/tmp/k/file', '/tmp/k/other'), e2b.FileNotFoundError)
  await sb.files.remove('/tmp/k2')
  assert.equal(await sb.files.exists('/tmp/k2/new/place.txt'), false)
  await sb.files.remove('/tmp/k2')
})

test('entries carry owner, group, symlinkTarget and a modifiedTime to the millisecond', async () => {
  await sb.commands.run("mkdir -p /tmp/own && echo x > /tmp/own/f && chown user:user /tmp/own/f && " +
    "touch -d '2026-03-04 05:06:07.891 UTC' /tmp/own/f && ln -sfn f /tmp/own/link", { user: 'root' })
  const f = await sb.files.getInfo('/tmp/own/f')
  assert.deepEqual([f.owner, f.group], ['user', 'user'])
  assert.equal(f.modifiedTime.toISOString(), '2026-03-04T05:06:07.891Z')
  assert.equal(f.symlinkTarget, undefined)
  const link = await sb.files.getInfo('/tmp/own/link')
  assert.deepEqual([link.type, link.symlinkTarget, link.owner, link.group], ['symlink', 'f', 'root', 'root'])
  const listed = Object.fromEntries((await sb.files.list('/tmp/own')).map((e) => [e.name, e]))
  assert.equal(listed.link.symlinkTarget, 'f')
  assert.equal(listed.f.owner, 'user')
})

test('as user `user`: files are its own, relative paths start at its home, and its permissions apply', async () => {
  const as = { user: 'user' }
  const w = await sb.files.write('notes/today.txt', 'mine', as)
  assert.equal(w.path, '/home/user/notes/today.txt')
  assert.equal(await sb.files.read('notes/today.txt', as), 'mine')
  const info = await sb.files.getInfo('notes/today.txt', as)
  assert.deepEqual([info.path, info.owner, info.group], ['/home/user/notes/today.txt', 'user', 'user'])
  assert.equal((await sb.commands.run('stat -c %U:%G /home/user/notes /home/user/notes/today.txt')).stdout,
    'user:user\nuser:user\n')
  assert.equal(await sb.files.makeDir('made/here', as), true)
  assert.equal((await sb.files.getInfo('/home/user/made/here')).owner, 'user')
  const moved = await sb.files.rename('notes/today.txt', 'moved.txt', as)
  assert.equal(moved.path, '/home/user/moved.txt')
  assert.deepEqual((await sb.files.list('.', as)).map((e) => e.path).filter((p) => !p.includes('/.')),
    ['/home/user/made', '/home/user/moved.txt', '/home/user/notes'])
  // what root keeps to itself stays its own
  await sb.files.write('/tmp/root-only', 'secret', { user: 'root' })
  await sb.commands.run('chmod 600 /tmp/root-only', { user: 'root' })
  await assert.rejects(sb.files.read('/tmp/root-only', as))
  await assert.rejects(sb.files.write('/work/not-mine.txt', 'x', as))
  await assert.rejects(sb.files.makeDir('/work/not-mine', as))
  assert.equal(await sb.files.exists('/work/not-mine.txt'), false)
  await assert.rejects(sb.files.getInfo('/tmp', { user: 'no-such-user' }), e2b.InvalidArgumentError)
  // a command as user starts in its home
  assert.equal((await sb.commands.run('id -un; pwd', as)).stdout, 'user\n/home/user\n')
  assert.equal((await sb.commands.run('pwd', { ...as, cwd: 'made' })).stdout, '/home/user/made\n')
})

test('the sandbox plane wants the sandbox\'s own access token; a sandbox that is gone is 502', async () => {
  const url = process.env.E2B_SANDBOX_URL
  const headers = { 'E2b-Sandbox-Id': sb.sandboxId, 'E2b-Sandbox-Port': '49983' }
  // a wrong token is answered as a sandbox that is not there: 502 (ids cannot be probed)
  let r = await fetch(`${url}/health`, { headers: { ...headers, 'X-Access-Token': 'not-it' } })
  assert.equal(r.status, 502)
  assert.equal((await r.json()).code, 502)
  r = await fetch(`${url}/files?path=/etc/hostname`, { headers })
  assert.equal(r.status, 502)
  // nothing of an upload is taken before the token is checked: it is refused on its head and
  // the connection closed, so a client still sending its body may see the close before the 502
  const form = new FormData()
  form.append('file', new Blob(['sneaky']), '/tmp/sneaky')
  r = await fetch(`${url}/files`, { method: 'POST', body: form, headers: { ...headers, 'X-Access-Token': 'not-it' } })
    .catch((e) => e)
  assert.ok(r.status === 502 || /EPIPE|ECONNRESET|other side closed/.test(String(r.cause)), String(r.cause ?? r.status))
  assert.equal(await sb.files.exists('/tmp/sneaky'), false)

  const gone = await Sandbox.create()
  await gone.kill()
  assert.equal(await gone.isRunning(), false)
  r = await fetch(`${url}/health`, { headers: { 'E2b-Sandbox-Id': gone.sandboxId } })
  assert.equal(r.status, 502)
  assert.equal((await r.json()).sandboxId, gone.sandboxId)
  await assert.rejects(gone.commands.run('true'))
  await assert.rejects(gone.files.read('/etc/hostname'))
})

// Polls cond() every 50 ms until it is true; fails after ms.
async function until (cond, ms, what) {
  const deadline = Date.now() + ms
  while (!(await cond())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('watchDir: events of what commands.run does, recursive or not, stop() ends it', async () => {
  await sb.files.makeDir('/tmp/wd/old')
  const flat = []
  const deep = []
  let exited = false
  const h1 = await sb.files.watchDir('/tmp/wd', (e) => flat.push([e.type, e.name]), { onExit: () => { exited = true } })
  const h2 = await sb.files.watchDir('/tmp/wd', (e) => deep.push([e.type, e.name]), { recursive: true })
  await sb.commands.run('echo hi > /tmp/wd/a.txt && mkdir /tmp/wd/sub && echo x > /tmp/wd/sub/b.txt && rm /tmp/wd/a.txt')
  await sb.commands.run('echo m > /tmp/wd/marker')
  const has = (list, type, name) => list.some(([t, n]) => t === type && n === name)
  await until(() => has(deep, 'create', 'marker') && has(flat, 'create', 'marker'), 30_000, 'the marker')
  for (const list of [flat, deep]) {
    assert.ok(has(list, 'create', 'a.txt') && has(list, 'write', 'a.txt') && has(list, 'remove', 'a.txt'), list)
    assert.ok(has(list, 'create', 'sub'), list)
  }
  assert.ok(has(deep, 'create', 'sub/b.txt'), deep)
  assert.ok(!flat.some(([, n]) => n.startsWith('sub/')), flat)
  await h1.stop()
  await h2.stop()
  await until(() => exited, 10_000, 'onExit after stop()')
  const seen = flat.length
  await sb.commands.run('echo again > /tmp/wd/later')
  // a stopped watch hears nothing more: the new watch below sees the next change, the old one not
  const after = []
  const h3 = await sb.files.watchDir('/tmp/wd', (e) => after.push(e.name))
  await sb.commands.run('echo z > /tmp/wd/last')
  await until(() => after.includes('last'), 30_000, 'the new watch\'s event')
  await h3.stop()
  assert.equal(flat.length, seen)
})

test('watchDir of what is missing is FileNotFoundError; of a file, InvalidArgumentError', async () => {
  await assert.rejects(sb.files.watchDir('/tmp/no/such/folder', () => {}), e2b.FileNotFoundError)
  await sb.files.write('/tmp/wfile', 'x')
  await assert.rejects(sb.files.watchDir('/tmp/wfile', () => {}), e2b.InvalidArgumentError)
})

test('polling watchers: create, events taken once, remove; unknown ids; at most 8 per sandbox', async () => {
  const token = (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}`)).body.access_token
  const headers = { 'E2b-Sandbox-Id': sb.sandboxId, 'X-Access-Token': token, 'Content-Type': 'application/json',
    'Connect-Protocol-Version': '1' }
  const call = async (method, body) => {
    const r = await fetch(`${process.env.E2B_SANDBOX_URL}/filesystem.Filesystem/${method}`,
      { method: 'POST', headers, body: JSON.stringify(body) })
    return { status: r.status, body: await r.json() }
  }
  await sb.files.makeDir('/tmp/pw')
  let r = await call('CreateWatcher', { path: '/tmp/pw', recursive: true })
  assert.equal(r.status, 200, JSON.stringify(r.body))
  const id = r.body.watcherId
  await sb.commands.run('mkdir -p /tmp/pw/d && echo x > /tmp/pw/d/f.txt')
  const got = []
  await until(async () => {
    r = await call('GetWatcherEvents', { watcherId: id })
    assert.equal(r.status, 200)
    got.push(...(r.body.events || []))
    return got.some((e) => e.name === 'd/f.txt' && e.type === 'EVENT_TYPE_CREATE')
  }, 30_000, 'the watcher\'s events')
  assert.ok(got.some((e) => e.name === 'd' && e.type === 'EVENT_TYPE_CREATE'), JSON.stringify(got))
  r = await call('GetWatcherEvents', { watcher_id: id })
  assert.equal(r.status, 200)
  assert.ok(!(r.body.events || []).some((e) => e.name === 'd/f.txt' && e.type === 'EVENT_TYPE_CREATE'))
  assert.equal((await call('RemoveWatcher', { watcherId: id })).status, 200)
  assert.equal((await call('GetWatcherEvents', { watcherId: id })).body.code, 'not_found')
  assert.equal((await call('RemoveWatcher', { watcherId: id })).body.code, 'not_found')
  assert.equal((await call('CreateWatcher', { path: '/tmp/pw/none' })).body.code, 'not_found')

  const ids = []
  for (let i = 0; i < 8; i++) {
    r = await call('CreateWatcher', { path: '/tmp/pw' })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    ids.push(r.body.watcherId)
  }
  r = await call('CreateWatcher', { path: '/tmp/pw' })
  assert.equal(r.body.code, 'resource_exhausted')
  for (const w of ids) assert.equal((await call('RemoveWatcher', { watcherId: w })).status, 200)
  r = await call('CreateWatcher', { path: '/tmp/pw' })
  assert.equal(r.status, 200, JSON.stringify(r.body))
  await call('RemoveWatcher', { watcherId: r.body.watcherId })
})

test('watchDir: 16 at once per sandbox; stop() gives a place back', async () => {
  await withSandbox({}, async (box) => {
    const handles = []
    for (let i = 0; i < 16; i++) handles.push(await box.files.watchDir('/tmp', () => {}))
    await assert.rejects(box.files.watchDir('/tmp', () => {}), e2b.RateLimitError)
    await handles.pop().stop()
    // the front closes spaced's stream once it sees the client gone, and spaced frees the watch
    await until(async () => {
      try {
        handles.push(await box.files.watchDir('/tmp', () => {}))
        return true
      } catch (err) {
        assert.ok(err instanceof e2b.RateLimitError, err)
        return false
      }
    }, 30_000, 'a stopped watch\'s place')
    for (const h of handles) await h.stop()
  })
})

test('octet-stream and gzip uploads (envd 0.5.7): the SDK\'s gzip, useOctetStream and streams', async () => {
  const text = 'compress me '.repeat(5000)
  let w = await sb.files.write('/tmp/oct/gz.txt', text, { gzip: true })
  assert.deepEqual(w.path, '/tmp/oct/gz.txt')
  assert.equal(await sb.files.read('/tmp/oct/gz.txt'), text)
  assert.equal((await sb.files.getInfo('/tmp/oct/gz.txt')).owner, 'user')
  w = await sb.files.write('oct-plain.bin', new Uint8Array([0, 1, 2, 255]), { useOctetStream: true })
  assert.equal(w.path, '/home/user/oct-plain.bin')
  assert.deepEqual([...await sb.files.read('oct-plain.bin', { format: 'bytes' })], [0, 1, 2, 255])
  const stream = new ReadableStream({
    start (c) { c.enqueue(new TextEncoder().encode('from a ')); c.enqueue(new TextEncoder().encode('stream')); c.close() }
  })
  await sb.files.write('/tmp/oct/streamed', stream)
  assert.equal(await sb.files.read('/tmp/oct/streamed'), 'from a stream')
  await sb.files.write('/tmp/oct/empty', '', { useOctetStream: true })
  assert.equal(await sb.files.read('/tmp/oct/empty'), '')
  // bad bodies: clear errors, and the file stays as it was (not made, or not changed)
  const url = process.env.E2B_SANDBOX_URL
  const headers = { 'E2b-Sandbox-Id': sb.sandboxId, 'X-Access-Token': sb.envdAccessToken,
    'Content-Type': 'application/octet-stream' }
  let r = await fetch(`${url}/files?path=/tmp/oct/bad`, { method: 'POST', body: 'not gzip at all',
    headers: { ...headers, 'Content-Encoding': 'gzip' } })
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /not valid gzip/)
  assert.equal(await sb.files.exists('/tmp/oct/bad'), false)
  const { gzipSync } = await import('node:zlib')
  const gz = gzipSync(Buffer.from('cut short '.repeat(100000)))
  await sb.files.write('/tmp/oct/cut', 'original')
  r = await fetch(`${url}/files?path=/tmp/oct/cut`, { method: 'POST', body: gz.subarray(0, gz.length - 10),
    headers: { ...headers, 'Content-Encoding': 'gzip' } })
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /ended early/)
  assert.equal(await sb.files.read('/tmp/oct/cut'), 'original')
  r = await fetch(`${url}/files?path=/tmp/oct/br`, { method: 'POST', body: 'x', headers: { ...headers, 'Content-Encoding': 'br' } })
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /gzip or none/)
  assert.equal(await sb.files.exists('/tmp/oct/br'), false)
  r = await fetch(`${url}/files`, { method: 'POST', body: 'x', headers })
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /path=/)
})
