// tests/e2b/template_build.test.mjs - templates built through the unmodified SDK's template
// builder (Template().runCmd/copy/setEnvs/setWorkdir/setStartCmd, fromImage, Template.build,
// buildInBackground, getBuildStatus) on spaced's own builds, then started by alias; a failing
// step's BuildError with its log; the step cache shared with a second build; what is refused;
// another key's view of it all; the limits at their edges.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import readline from 'node:readline'
import { e2b, poll, Sandbox, spaced, uniq } from './helpers.mjs'

const { Template, BuildError, waitForFile } = e2b
const other = process.env.SPACE_OTHER_KEY

function contextDir (files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'e2b-tpl-'))
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
  return dir
}

// A small template: a command that writes a file, a copied file, an environment variable, a
// working folder, and a start command whose ready command passes a second after it starts.
function recipe (dir, word) {
  return Template({ fileContextPath: dir })
    .fromBaseImage()
    .setEnvs({ GREETING: `hello ${word}` })
    .runCmd(`echo ran-${word} && echo built-${word} > /opt/made`)
    .copy('hello.txt', '/opt/hello.txt')
    .setWorkdir('/srv')
    .setStartCmd('echo started > /tmp/started; sleep 1; touch /tmp/ready-flag; exec sleep 3600',
      waitForFile('/tmp/ready-flag'))
}

test('a template built with the SDK starts sandboxes by its alias, with its files, env, folder and start command; a second build is cached', async () => {
  const word = uniq()
  const name = `e2b-built-${word}`
  const dir = contextDir({ 'hello.txt': `copied ${word}\n` })
  const logs = []
  const built = await Template.build(recipe(dir, word), name, { onBuildLogs: (e) => logs.push(e.message) })
  assert.equal(built.name, name)
  // the build's log streamed to onBuildLogs: the step's own output, the steps as spaced ran them
  assert.ok(logs.some((m) => m === `ran-${word}`), logs.join('\n'))
  assert.ok(logs.some((m) => /^\[\d+\/\d+\] RUN /.test(m) && !m.endsWith('(cached)')), logs.join('\n'))
  assert.ok(await Template.aliasExists(name))

  // spaced recorded it, with the start and ready commands and the key's mark
  const { status, body } = await spaced('GET', `/v1/templates/${name}`)
  assert.equal(status, 200)
  assert.ok(body.config.labels['e2b.owner'])
  assert.equal(body.config.labels['space.ready'], waitForFile('/tmp/ready-flag').getCmd())

  const sb = await Sandbox.create(name, { timeoutMs: 120_000 })
  try {
    // the create answered once the ready command passed: the start command's flag is there
    assert.equal((await sb.files.read('/tmp/ready-flag')), '')
    assert.equal((await sb.files.read('/tmp/started')).trim(), 'started')
    assert.equal((await sb.files.read('/opt/made')).trim(), `built-${word}`)
    assert.equal((await sb.files.read('/opt/hello.txt')).trim(), `copied ${word}`)
    const r = await sb.commands.run('echo "$GREETING"; pwd')
    assert.equal(r.stdout, `hello ${word}\n/srv\n`)
  } finally {
    await Sandbox.kill(sb.sandboxId).catch(() => {})
  }

  // the same template again: the upload and every step come from the cache, no command runs
  const again = []
  await Template.build(recipe(dir, word), name, { onBuildLogs: (e) => again.push(e.message) })
  assert.ok(again.some((m) => m === "Skipping upload of 'hello.txt', already cached"), again.join('\n'))
  const steps = again.filter((m) => /^\[\d+\/\d+\] (RUN|COPY|WORKDIR) /.test(m))
  assert.equal(steps.length, 3, again.join('\n'))
  assert.ok(steps.every((m) => m.endsWith('(cached)')), again.join('\n'))
  assert.ok(!again.includes(`ran-${word}`), again.join('\n'))

  // fromTemplate: a template of the key's own is a base
  await Template.build(Template().fromTemplate(name).runCmd('cp /opt/made /opt/again'), `${name}-on`)
  const on = await Sandbox.create(`${name}-on`, { timeoutMs: 60_000 })
  try {
    assert.equal((await on.files.read('/opt/again')).trim(), `built-${word}`)
  } finally {
    await Sandbox.kill(on.sandboxId).catch(() => {})
  }

  // another key does not see it, cannot start from it, build on it or build over it
  assert.equal(await Template.aliasExists(name, { apiKey: other }), false)
  await assert.rejects(Sandbox.create(name, { apiKey: other }), /not found/)
  await assert.rejects(Template.build(Template().fromTemplate(name).runCmd('true'), `e2b-on-${word}`, { apiKey: other }),
    (e) => e instanceof BuildError && /fromTemplate: template .* not found/.test(e.message))
  await assert.rejects(Template.build(Template().fromBaseImage().runCmd('true'), name, { apiKey: other }),
    (e) => e instanceof BuildError && /403: template .* is not yours/.test(e.message))
  assert.equal(await Template.aliasExists(name), true)
})

test('a failing step raises BuildError with its log; buildInBackground and getBuildStatus show the same', async () => {
  const word = uniq()
  const failing = () => Template().fromBaseImage().runCmd(`echo before-${word}`)
    .runCmd(`echo oops-${word} >&2; exit 3`)
  await assert.rejects(Template.build(failing(), `e2b-fail-${word}`),
    (e) => e instanceof BuildError && e.message.includes(`oops-${word}`) && /exit/.test(e.message))
  assert.equal(await Template.aliasExists(`e2b-fail-${word}`), false) // nothing recorded

  const bg = await Template.buildInBackground(failing(), `e2b-fail-${word}`)
  const st = await poll(async () => {
    const s = await Template.getBuildStatus(bg)
    return s.status === 'error' && s
  }, 'the build to fail', 300_000)
  assert.equal(st.reason.step, '2')
  assert.ok(st.reason.message.includes(`oops-${word}`))
  assert.ok(st.reason.logEntries.some((e) => e.message === `oops-${word}`))
  assert.ok(st.logEntries.some((e) => e.message === `oops-${word}` && e.level === 'error'))
  // logsOffset: only what follows
  const tail = await Template.getBuildStatus(bg, { logsOffset: st.logEntries.length - 1 })
  assert.equal(tail.logEntries.length, 1)

  // a build is its key's: another key, and an id that is none, are 404
  await assert.rejects(Template.getBuildStatus(bg, { apiKey: other }), /404/)
  await assert.rejects(Template.getBuildStatus({ templateId: bg.templateId, buildId: 'no-such-build' }), /404/)
})

test('what the front refuses, before anything runs', async () => {
  const word = uniq()
  await assert.rejects(Template.build(Template().fromBaseImage().skipCache().runCmd('true'), `e2b-skip-${word}`),
    (e) => e instanceof BuildError && /skipCache is not offered/.test(e.message))
  await assert.rejects(Template.build(Template().fromImage('debian:12', { username: 'u', password: 'p' }).runCmd('true'),
    `e2b-cred-${word}`), (e) => e instanceof BuildError && /registry credentials .* not offered/.test(e.message))
  await assert.rejects(Template.build(Template().fromImage('space:default').runCmd('true'), `e2b-space-${word}`),
    (e) => e instanceof BuildError && /names a space template: fromTemplate names those/.test(e.message))
  await assert.rejects(Template.build(Template().fromBaseImage().runCmd('true'), 'default'),
    (e) => e instanceof BuildError && /space's default template/.test(e.message))
  await assert.rejects(Template.build(Template().fromBaseImage().runCmd('true'), 'bad name!'),
    (e) => e instanceof BuildError && /400/.test(e.message))
  // a copy whose files were never uploaded
  const r = await fetch(`${process.env.E2B_API_URL}/v3/templates`, {
    method: 'POST', headers: { 'X-API-KEY': process.env.E2B_API_KEY }, body: JSON.stringify({ name: `e2b-nofile-${word}` })
  })
  const { templateID, buildID } = await r.json()
  const start = await fetch(`${process.env.E2B_API_URL}/v2/templates/${templateID}/builds/${buildID}`, {
    method: 'POST',
    headers: { 'X-API-KEY': process.env.E2B_API_KEY },
    body: JSON.stringify({ steps: [{ type: 'COPY', args: ['x', '/x', '', ''], filesHash: 'ab'.repeat(32) }] })
  })
  assert.equal(start.status, 400)
  assert.match((await start.json()).message, /were not uploaded/)
})

test('a start command that ends before its ready command passes fails the create, with its output', async () => {
  const word = uniq()
  const name = `e2b-nostart-${word}`
  await Template.build(Template().fromBaseImage().setStartCmd(`echo gave-up-${word}; exit 7`, 'false'), name)
  await assert.rejects(Sandbox.create(name, { timeoutMs: 60_000, metadata: { t: word } }),
    (e) => /422/.test(e.message) && e.message.includes(`gave-up-${word}`))
  const left = (await spaced('GET', '/v1/sandboxes')).body.sandboxes.filter((x) => x.metadata?.t === word)
  assert.deepEqual(left, []) // the sandbox went
})

// The status of build bg once it ended.
async function ended (bg) {
  return poll(async () => {
    const s = await Template.getBuildStatus(bg)
    return (s.status === 'ready' || s.status === 'error') && s
  }, 'the build to end', 300_000)
}

test('limits: a log line of 4,096 bytes (GW_BUILD_LINE_MAX), the error\'s last 20 lines (GW_BUILD_REASON_LINES)', async () => {
  const word = uniq()
  const bg = await Template.buildInBackground(Template().fromBaseImage().runCmd(
    `python3 -c "print('a' * 4096); print('b' * 4097)"; for i in $(seq 1 30); do echo line-$i-${word}; done; exit 4`),
  `e2b-limits-${word}`)
  const st = await ended(bg)
  assert.equal(st.status, 'error')
  const msgs = st.logEntries.map((e) => e.message)
  assert.ok(msgs.includes('a'.repeat(4096)), 'a line of 4,096 bytes is kept whole')
  assert.ok(msgs.includes('b'.repeat(4096)), 'a longer one is cut at 4,096')
  assert.ok(!msgs.some((m) => /^b+$/.test(m) && m.length !== 4096))
  // the reason: the error, then the step's last lines: 19 of its output and the error's own
  assert.equal(st.reason.logEntries.length, 20)
  assert.ok(st.reason.message.includes(`line-12-${word}\n`), st.reason.message)
  assert.ok(st.reason.message.includes(`line-30-${word}`))
  assert.ok(!st.reason.message.includes(`line-11-${word}`), st.reason.message)
})

test('limits: a build keeps 10,000 log entries (GW_BUILD_LOG_MAX) and says where it cut', async () => {
  const word = uniq()
  const bg = await Template.buildInBackground(Template().fromBaseImage().runCmd(`seq 1 10010; echo ${word}`),
    `e2b-cut-${word}`)
  const st = await ended(bg)
  assert.equal(st.status, 'ready')
  assert.equal(st.logEntries.length, 10_000)
  assert.match(st.logEntries[9_999].message, /the log is cut here: a build keeps 10000 entries/)
  assert.match(st.logEntries[9_998].message, /^\d+$/) // up to the cut, the output as it came
  assert.ok(!st.logEntries.some((e) => e.message === word))
  // the template was recorded all the same
  assert.equal(await Template.aliasExists(`e2b-cut-${word}`), true)
})

test('limits: a template has at most 256 steps (RECIPE_STEPS_MAX)', async () => {
  const word = uniq()
  const steps = (n) => {
    let t = Template().fromBaseImage()
    for (let i = 0; i < n; i++) t = t.setEnvs({ STEP: String(i) })
    return t
  }
  await assert.rejects(Template.build(steps(257), `e2b-steps-${word}`),
    (e) => e instanceof BuildError && /at most 256 steps/.test(e.message))
  await Template.build(steps(256), `e2b-steps-${word}`)
  const { body } = await spaced('GET', `/v1/templates/e2b-steps-${word}`)
  assert.equal(body.config.env.STEP, '255')
})

// A registry on loopback with a busybox image (registry.py): its reference and a stop().
async function localRegistry () {
  const p = spawn('/usr/bin/python3', [new URL('registry.py', import.meta.url).pathname],
    { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = readline.createInterface({ input: p.stdout })
  const ended = new Promise((resolve) => p.on('exit', resolve))
  for await (const line of lines) {
    if (line.startsWith('ready ')) return { ref: line.slice(6), stop: () => { p.stdin.end(); return ended } }
  }
  throw new Error(`registry.py ended without a registry (${await ended})`)
}

test('fromImage: an image from a registry (on loopback here) is the base, its steps run on it', async () => {
  const word = uniq()
  const name = `e2b-image-${word}`
  const reg = await localRegistry()
  try {
    const logs = []
    await Template.build(Template().fromImage(reg.ref).runCmd(`echo ${word} > /tmp/made`), name,
      { onBuildLogs: (e) => logs.push(e.message) })
    assert.ok(logs.some((m) => m.includes(`FROM ${reg.ref}: importing the image`)), logs.join('\n'))
    const sb = await Sandbox.create(name, { timeoutMs: 60_000 })
    try {
      assert.equal(await sb.files.read('/etc/second.txt'), 'from the second layer\n') // the image's
      assert.equal(await sb.files.read('/tmp/made'), `${word}\n`) // the step's
    } finally {
      await Sandbox.kill(sb.sandboxId).catch(() => {})
    }
  } finally {
    await reg.stop()
  }
})

test('limits: a key has at most 16 builds asked for or under way (GW_BUILDS_PER_KEY); others still build', async () => {
  const word = uniq()
  const ask = (key, i) => fetch(`${process.env.E2B_API_URL}/v3/templates`, {
    method: 'POST', headers: { 'X-API-KEY': key }, body: JSON.stringify({ name: `e2b-ask-${word}-${i}` })
  })
  // the other key's: none of the tests before left one of its builds waiting
  for (let i = 0; i < 16; i++) assert.equal((await ask(other, i)).status, 202)
  const over = await ask(other, 16)
  assert.equal(over.status, 429)
  assert.match((await over.json()).message, /this key has 16 builds asked for or under way/)
  assert.equal((await ask(process.env.E2B_API_KEY, 17)).status, 202)
})
