// tests/e2b/defaults.test.mjs - envd's defaults through the unmodified SDK: a command, a
// terminal or a file call that names no user acts as `user` (uid 1000) with home and working
// folder /home/user, as under E2B's envd; `user: 'root'` still acts as root (home /root); a
// sandbox without a `user` account acts as root in /work, space's own default.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, poll, withSandbox } from './helpers.mjs'

const MICROVM = process.env.SPACE_TEST_ISOLATION === 'microvm'

let sb
before(async () => { sb = await Sandbox.create() })
after(async () => { await sb.kill() })

test('a command that names no user runs as `user` in /home/user', async () => {
  const r = await sb.commands.run('whoami; id -u; pwd; echo "$HOME"')
  assert.equal(r.stdout, 'user\n1000\n/home/user\n/home/user\n')
  await sb.commands.run('mkdir -p sub/dir')
  assert.equal((await sb.commands.run('pwd', { cwd: 'sub/dir' })).stdout, '/home/user/sub/dir\n')
  // what it makes is its own
  await sb.commands.run('echo x > /tmp/by-default')
  assert.equal((await sb.commands.run('stat -c %U:%G /tmp/by-default /home/user/sub')).stdout,
    'user:user\nuser:user\n')
  // a background command too
  const h = await sb.commands.run('whoami; pwd', { background: true })
  assert.equal((await h.wait()).stdout, 'user\n/home/user\n')
})

test('`user: root` still runs as root, from its home', async () => {
  const r = await sb.commands.run('whoami; pwd; echo "$HOME"', { user: 'root' })
  assert.equal(r.stdout, 'root\n/root\n/root\n')
  assert.equal((await sb.commands.run('pwd', { user: 'root', cwd: '/work' })).stdout, '/work\n')
})

test('sudo: root without a password in a microVM; refused under gVisor (no_new_privs)', async () => {
  const r = await sb.commands.run('sudo -n id -u 2>&1; echo "status $?"')
  if (MICROVM) assert.equal(r.stdout, '0\nstatus 0\n')
  else assert.match(r.stdout, /no new privileges[\s\S]*status 1\n$/, r.stdout)
})

test('a file call that names no user acts as `user`: relative paths from /home/user, files its own', async () => {
  const w = await sb.files.write('docs/a.txt', 'mine')
  assert.equal(w.path, '/home/user/docs/a.txt')
  assert.equal(await sb.files.read('docs/a.txt'), 'mine')
  assert.equal(await sb.files.exists('docs/a.txt'), true)
  const info = await sb.files.getInfo('docs/a.txt')
  assert.deepEqual([info.path, info.owner, info.group], ['/home/user/docs/a.txt', 'user', 'user'])
  await sb.files.write('/tmp/abs-default', 'x')
  assert.equal((await sb.files.getInfo('/tmp/abs-default')).owner, 'user')
  assert.equal(await sb.files.makeDir('docs/made'), true)
  assert.equal((await sb.files.getInfo('/home/user/docs/made')).owner, 'user')
  const moved = await sb.files.rename('docs/a.txt', 'docs/b.txt')
  assert.equal(moved.path, '/home/user/docs/b.txt')
  assert.deepEqual((await sb.files.list('docs')).map((e) => e.path), ['/home/user/docs/b.txt', '/home/user/docs/made'])
  assert.equal((await sb.commands.run('stat -c %U /home/user/docs /home/user/docs/b.txt', { user: 'root' })).stdout,
    'user\nuser\n')
  await sb.files.remove('docs')
  assert.equal(await sb.files.exists('/home/user/docs'), false)
  // its permissions apply: root's folders are not its own
  await assert.rejects(sb.files.write('/work/not-mine.txt', 'x'))
  assert.equal(await sb.files.exists('/work/not-mine.txt'), false)
})

test('file calls as `user: root` are root\'s, relative paths from /root', async () => {
  const w = await sb.files.write('rootfile', 'r', { user: 'root' })
  assert.equal(w.path, '/root/rootfile')
  assert.equal((await sb.files.getInfo('/root/rootfile', { user: 'root' })).owner, 'root')
  await sb.files.write('/work/by-root.txt', 'ok', { user: 'root' })
  assert.equal((await sb.files.getInfo('/work/by-root.txt')).owner, 'root')
})

test('watchDir of a relative path watches it under /home/user', async () => {
  await sb.files.makeDir('watched')
  const seen = []
  const w = await sb.files.watchDir('watched', (ev) => seen.push(ev.name))
  try {
    await sb.files.write('/home/user/watched/new.txt', 'x')
    await poll(() => seen.includes('new.txt'), 'the event of new.txt', 30_000)
  } finally {
    await w.stop()
  }
})

test('a terminal that names no user is `user`\'s, in /home/user', async () => {
  let out = ''
  const t = await sb.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) } })
  try {
    await sb.pty.sendInput(t.pid, new TextEncoder().encode('echo "who=$(whoami) at=$(pwd)"\n'))
    await poll(() => out.includes('who=user at=/home/user'), 'the terminal\'s answer', 30_000)
  } finally {
    await sb.pty.kill(t.pid)
  }
})

test('a sandbox without a `user` account: calls that name no user are root\'s in /work', async () => {
  await withSandbox({}, async (bare) => {
    // as if its template had no such account (named calls do not ask whether it has)
    await bare.commands.run("sed -i '/^user:/d' /etc/passwd", { user: 'root' })
    assert.equal((await bare.commands.run('whoami; pwd')).stdout, 'root\n/work\n')
    const w = await bare.files.write('rel.txt', 'r')
    assert.equal(w.path, '/work/rel.txt')
    assert.equal((await bare.files.getInfo('rel.txt')).owner, 'root')
    assert.equal(await bare.files.read('/work/rel.txt'), 'r')
    // naming the user that is not there is the SDK's InvalidArgumentError, as before
    await assert.rejects(bare.files.read('/work/rel.txt', { user: 'user' }), /user/)
  })
})
