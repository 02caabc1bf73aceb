// bench/e2b_code.mjs - the Code Interpreter side of bench/e2b.py: a sandbox of
// code-interpreter-v1 made with E2B's Code Interpreter SDK (path in SPACE_E2B_CI_SDK), the time
// of its first runCode('1+1') after the create answered, then N round trips of runCode('1+1')
// after 3 to warm up; prints {"create", "first", "ms": [...]} in milliseconds as JSON.
const { Sandbox } = await import(process.env.SPACE_E2B_CI_SDK + '/dist/index.mjs')
const n = Number(process.argv[2] || 20)
let t = performance.now()
const sb = await Sandbox.create({ requestTimeoutMs: 3_600_000 }) // the template may be built first
const create = performance.now() - t
try {
  t = performance.now()
  const first = await sb.runCode('1+1')
  if (first.text !== '2') throw new Error(`runCode('1+1') gave ${first.text}`)
  const firstMs = performance.now() - t
  for (let i = 0; i < 3; i++) await sb.runCode('1+1')
  const ms = []
  for (let i = 0; i < n; i++) {
    t = performance.now()
    await sb.runCode('1+1')
    ms.push(performance.now() - t)
  }
  console.log(JSON.stringify({ create, first: firstMs, ms }))
} finally {
  await sb.kill()
}
