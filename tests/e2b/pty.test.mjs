// tests/e2b/pty.test.mjs - sandbox.pty through the unmodified SDK: a bash session of the size
// asked, typed at, resized, left and joined again, killed; and the sizes spaced refuses.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from './helpers.mjs'

let sb
before(async () => { sb = await Sandbox.create() })
after(async () => { await sb.kill() })

// Collects a terminal's output; until(text) resolves once text appeared after the last one awaited.
function screen () {
  let data = ''
  let pos = 0
  let waiters = []
  const s = {
    onData: (bytes) => {
      assert.ok(bytes instanceof Uint8Array)
      data += Buffer.from(bytes).toString()
      waiters = waiters.filter((w) => !w())
    },
    until: (text, ms = 60000) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(text)} in ${ms} ms: ${JSON.stringify(data)}`)), ms)
      const check = () => {
        const at = data.indexOf(text, pos)
        if (at < 0) return false
        pos = at + text.length
        clearTimeout(timer)
        resolve()
        return true
      }
      if (!check()) waiters.push(check)
    }),
    get data () { return data }
  }
  return s
}

const enc = (s) => new TextEncoder().encode(s)

test('a terminal of the size asked, typed at, resized; its exit ends wait', async () => {
  const term = screen()
  const h = await sb.pty.create({ cols: 100, rows: 30, onData: term.onData })
  await sb.pty.sendInput(h.pid, enc('stty size; echo "term=$TERM"; tty\n'))
  await term.until('30 100')
  await term.until('term=xterm-256color')
  await term.until('/dev/pts/')
  await sb.pty.resize(h.pid, { cols: 132, rows: 43 })
  await sb.pty.sendInput(h.pid, enc('stty size\n'))
  await term.until('43 132')
  // the listing shows it, and its size now
  const { body } = await (await import('./helpers.mjs')).spaced('GET', `/v1/sandboxes/${sb.sandboxId}/processes/${h.pid}`)
  assert.deepEqual(body.pty, { cols: 132, rows: 43 })
  await sb.pty.sendInput(h.pid, enc('exit 3\n'))
  const r = await h.wait().catch((e) => e)
  assert.equal(r.exitCode, 3)
})

test('left and joined again, then killed', async () => {
  const first = screen()
  const h = await sb.pty.create({ cols: 80, rows: 24, onData: first.onData })
  await sb.pty.sendInput(h.pid, enc('KEPT=kept-value; echo ready\n'))
  await first.until('ready')
  await h.disconnect()
  const again = screen()
  const h2 = await sb.pty.connect(h.pid, { onData: again.onData })
  await sb.pty.sendInput(h.pid, enc('echo "$KEPT"\n'))
  await again.until('kept-value')
  assert.equal(await sb.pty.kill(h.pid), true)
  const r = await h2.wait().catch((e) => e)
  assert.equal(r.exitCode, -1)
  assert.equal(await sb.pty.kill(h.pid), false)
})

test('a size no terminal has is refused, and nothing starts', async () => {
  for (const size of [{ cols: 0, rows: 24 }, { cols: 80, rows: 4097 }]) {
    await assert.rejects(sb.pty.create({ ...size, onData: () => {} }), (e) => /terminal has 1..4096/.test(e.message))
  }
  const running = await sb.commands.list()
  assert.equal(running.length, 0, JSON.stringify(running))
})
