// bench/e2b_run.mjs - the E2B side of bench/e2b.py: N round trips of commands.run('true') through
// the E2B front with E2B's own SDK (path in SPACE_E2B_SDK), after 3 to warm up; prints the
// milliseconds of each as a JSON list.
const { Sandbox } = await import(process.env.SPACE_E2B_SDK + '/dist/index.mjs')
const n = Number(process.argv[2] || 20)
const sb = await Sandbox.create()
try {
  for (let i = 0; i < 3; i++) await sb.commands.run('true')
  const ms = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await sb.commands.run('true')
    ms.push(performance.now() - t)
  }
  console.log(JSON.stringify(ms))
} finally {
  await sb.kill()
}
