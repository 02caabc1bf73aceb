// tests/e2b/output.test.mjs - a command's output through the unmodified SDK arrives whole: a
// foreground commands.run() gets every byte its command printed, in order, however much it is
// and however slowly its onStdout takes it (the front starts commands under spaced's "drop"
// policy, which discards output only while no handle is connected; a connected one holds the
// command back). The output is numbered lines, compared exactly.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from './helpers.mjs'

const RUNS = 5

let sb
before(async () => { sb = await Sandbox.create() })
after(async () => { await sb.kill() })

// A command printing `lines` numbered lines of 10 bytes, then `last`; and what it prints.
const numbers = (lines, last) =>
  `python3 -c 'import sys; n = int(sys.argv[1]); ` +
  `sys.stdout.write("".join("%09d\\n" % i for i in range(n)) + sys.argv[2])' ${lines} ${last}`
const printed = (lines, last) =>
  Array.from({ length: lines }, (_, i) => String(i).padStart(9, '0') + '\n').join('') + last

function assertWhole (got, want, what) {
  if (got === want) return
  let at = 0
  while (at < got.length && at < want.length && got[at] === want[at]) at++
  assert.fail(`${what}: ${got.length} characters arrived of ${want.length}; they differ from ` +
    `${at} on (got ${JSON.stringify(got.slice(at, at + 30))}, want ${JSON.stringify(want.slice(at, at + 30))})`)
}

test('run gets all of 300,001 bytes of output, every time', async () => {
  const want = printed(30000, 'x') // 300,001 bytes
  for (let i = 0; i < RUNS; i++) {
    const r = await sb.commands.run(numbers(30000, 'x'))
    assert.equal(r.exitCode, 0)
    assertWhole(r.stdout, want, `run ${i + 1}`)
  }
})

test('run gets all of a few MiB of output, every time', async () => {
  const lines = 4 * 1024 * 1024 / 10 | 0
  const want = printed(lines, 'y')
  for (let i = 0; i < RUNS; i++) {
    const r = await sb.commands.run(numbers(lines, 'y'))
    assert.equal(r.exitCode, 0)
    assertWhole(r.stdout, want, `run ${i + 1}`)
  }
})

test('a slow onStdout slows the command and misses nothing', async () => {
  const lines = 2 * 1024 * 1024 / 10 | 0
  const want = printed(lines, 'z')
  for (let i = 0; i < 2; i++) {
    const seen = []
    let calls = 0
    const r = await sb.commands.run(numbers(lines, 'z'), {
      onStdout: async (d) => {
        seen.push(d)
        // the consumer's own pace: a pause every few pieces (the SDK awaits it)
        if (++calls % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })
    assert.equal(r.exitCode, 0)
    assertWhole(seen.join(''), want, `onStdout, run ${i + 1}`)
    assertWhole(r.stdout, want, `stdout, run ${i + 1}`)
  }
})
