// tests/e2b/commands.test.mjs - commands through the unmodified SDK: results and exit codes,
// streamed output in order, envs, cwd, user, stdin, background commands left and re-joined,
// several handles on one command, unread commands that never block, list, kill, and timeouts
// that kill.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, Sandbox, spaced } from './helpers.mjs'

let sb
before(async () => { sb = await Sandbox.create({ envs: { FROM_CREATE: 'c1' } }) })
after(async () => { await sb.kill() })

test('run gives stdout, stderr and the exit code; a failure throws CommandExitError', async () => {
  const r = await sb.commands.run('echo out; echo err >&2; echo "$FROM_CREATE $Y"; pwd',
    { envs: { Y: 'y1' }, cwd: '/tmp' })
  assert.deepEqual({ ...r }, { exitCode: 0, stdout: 'out\nc1 y1\n/tmp\n', stderr: 'err\n', error: undefined })
  await assert.rejects(sb.commands.run('echo partial; exit 3'), (e) => {
    assert.ok(e instanceof e2b.CommandExitError)
    assert.equal(e.exitCode, 3)
    assert.equal(e.stdout, 'partial\n')
    assert.equal(e.error, 'exit status 3')
    return true
  })
})

test('output arrives as it is printed, in order', async () => {
  const seen = []
  const t0 = Date.now()
  await sb.commands.run('for i in 1 2 3 4; do echo $i; sleep 0.3; done', {
    onStdout: (d) => seen.push([Date.now() - t0, d])
  })
  assert.deepEqual(seen.map(([, d]) => d).join(''), '1\n2\n3\n4\n')
  // the first line came well before the command ended (four lines, 0.3 s apart)
  assert.ok(seen.length >= 2 && seen[0][0] < seen[seen.length - 1][0], JSON.stringify(seen))
})

test('user and a missing command', async () => {
  assert.equal((await sb.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  await assert.rejects(sb.commands.run('no-such-command-here'), (e) => e.exitCode === 127)
})

test('stdin: sendStdin and closeStdin reach a background command', async () => {
  const h = await sb.commands.run('cat; echo eof', { background: true, stdin: true })
  await sb.commands.sendStdin(h.pid, 'abc\n')
  await h.sendStdin('é€\n')
  await h.closeStdin()
  const r = await h.wait()
  assert.equal(r.stdout, 'abc\né€\neof\n')
  await assert.rejects(sb.commands.sendStdin(h.pid, 'late'), e2b.NotFoundError)
})

test('a background command outlives its disconnected handle and can be joined again', async () => {
  const h = await sb.commands.run('for i in $(seq 1 15); do echo line$i; sleep 0.2; done; echo done',
    { background: true })
  assert.ok(h.pid > 0)
  await h.disconnect()
  const listed = await sb.commands.list()
  const me = listed.find((p) => p.pid === h.pid)
  assert.ok(me, JSON.stringify(listed))
  assert.equal(me.cmd, '/bin/bash')
  assert.deepEqual(me.args, ['-l', '-c', 'for i in $(seq 1 15); do echo line$i; sleep 0.2; done; echo done'])
  const again = await sb.commands.connect(h.pid)
  const r = await again.wait()
  assert.equal(r.exitCode, 0)
  assert.ok(r.stdout.endsWith('line15\ndone\n'), r.stdout)
  await assert.rejects(sb.commands.connect(h.pid), e2b.NotFoundError) // it has exited
})

test('kill ends a command with a signal; killing it again is false', async () => {
  const h = await sb.commands.run('sleep 300', { background: true })
  assert.equal(await sb.commands.kill(h.pid), true)
  await assert.rejects(h.wait(), (e) => {
    assert.ok(e instanceof e2b.CommandExitError)
    assert.equal(e.exitCode, -1)
    assert.equal(e.error, 'signal: killed')
    return true
  })
  assert.equal(await sb.commands.kill(h.pid), false)
  assert.equal((await sb.commands.list()).some((p) => p.pid === h.pid), false)
})

test('a command past its timeoutMs is killed, and says so', async () => {
  await assert.rejects(sb.commands.run('sleep 2; touch /tmp/too-late', { timeoutMs: 1000 }), e2b.TimeoutError)
  // it was killed, not left running: the file never appears
  const r = await sb.commands.run('sleep 2.5; test -e /tmp/too-late && echo present || echo absent')
  assert.equal(r.stdout, 'absent\n')
  const { body } = await spaced('GET', `/v1/sandboxes/${sb.sandboxId}/processes`)
  assert.equal(body.processes.filter((p) => p.state === 'running' && p.cmd.includes('too-late')).length, 0)
})

// Polls cond() until it is true; fails after `seconds`.
async function until (cond, seconds, what) {
  const deadline = Date.now() + seconds * 1000
  while (!(await cond())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const processOf = async (pid) => (await spaced('GET', `/v1/sandboxes/${sb.sandboxId}/processes/${pid}`)).body

test('two handles connected to one background command both get all its output', async () => {
  const h = await sb.commands.run('read go; for i in $(seq 1 2000); do echo n$i; done',
    { background: true, stdin: true })
  const a = await sb.commands.connect(h.pid)
  const b = await sb.commands.connect(h.pid)
  // a handle's start event comes once spaced counts it among the command's readers
  assert.equal((await processOf(h.pid)).readers, 3)
  await h.sendStdin('go\n')
  const want = Array.from({ length: 2000 }, (_, i) => `n${i + 1}\n`).join('')
  for (const r of await Promise.all([h.wait(), a.wait(), b.wait()])) {
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, want)
  }
})

test('a background command nobody reads never blocks, however much it prints', async () => {
  const h = await sb.commands.run('head -c 8000000 /dev/zero | tr "\\0" x; echo; echo finished >&2',
    { background: true })
  await h.disconnect()
  assert.equal((await processOf(h.pid)).output, 'drop')
  await until(async () => (await processOf(h.pid)).state === 'exited', 120, 'the command to finish unread')
  const p = await processOf(h.pid)
  assert.equal(p.exit_code, 0)
})

test('a command has at most 16 readers: one more connect is refused, the others read on', async () => {
  const h = await sb.commands.run('read go; echo all', { background: true, stdin: true })
  const more = []
  for (let i = 1; i < 16; i++) more.push(await sb.commands.connect(h.pid)) // with h: 16 (PROC_MAX_READERS)
  await assert.rejects(sb.commands.connect(h.pid), (e) => {
    assert.match(e.message, /readers/)
    return true
  })
  await h.sendStdin('go\n')
  for (const r of await Promise.all([h, ...more].map((x) => x.wait()))) assert.equal(r.stdout, 'all\n')
})
