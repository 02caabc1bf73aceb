// tests/e2b/python_shapes.test.mjs - what E2B's Python SDK (2.45, which cannot be installed
// here: there is no PyPI) needs of the control plane, asked as it asks: its routes (/sandboxes,
// not /v2), its bodies, the exact success statuses its generated client parses, the fields its
// from_dict requires, and error bodies with an integer code and a message.
import { test } from 'node:test'
import assert from 'node:assert/strict'

const api = process.env.E2B_API_URL
// the Python SDK checks that a key looks like E2B's: e2b_<rest> stands for sp_<rest>
const key = process.env.E2B_API_KEY.replace(/^sp_/, 'e2b_')

async function call (method, path, body) {
  const r = await fetch(api + path, {
    method,
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', 'User-Agent': 'e2b-python-sdk/2.45.1' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : null, type: r.headers.get('content-type') }
}

function isError (res, code) {
  assert.equal(res.status, code)
  assert.equal(res.type, 'application/json')
  assert.equal(res.body.code, code)
  assert.equal(typeof res.body.message, 'string')
}

const REQUIRED_SANDBOX = ['templateID', 'sandboxID', 'clientID', 'envdVersion']
const REQUIRED_DETAIL = ['templateID', 'sandboxID', 'clientID', 'startedAt', 'endAt', 'cpuCount', 'memoryMB',
  'diskSizeMB', 'state', 'envdVersion']

test('the Python SDK\'s sandbox life, status by status and field by field', async () => {
  const made = await call('POST', '/sandboxes', {
    templateID: 'base', timeout: 300, metadata: {}, envVars: {}, secure: true, allow_internet_access: true
  })
  assert.equal(made.status, 201)
  for (const f of REQUIRED_SANDBOX) assert.ok(made.body[f] !== undefined && made.body[f] !== null, f)
  const id = made.body.sandboxID
  try {
    const one = await call('GET', `/sandboxes/${id}`)
    assert.equal(one.status, 200)
    for (const f of REQUIRED_DETAIL) assert.ok(one.body[f] !== undefined && one.body[f] !== null, f)
    assert.equal(one.body.state, 'running')
    assert.ok(!Number.isNaN(Date.parse(one.body.startedAt)) && !Number.isNaN(Date.parse(one.body.endAt)))

    const listed = await call('GET', '/sandboxes')
    assert.equal(listed.status, 200)
    assert.ok(Array.isArray(listed.body))
    const mine = listed.body.find((s) => s.sandboxID === id)
    for (const f of REQUIRED_DETAIL) assert.ok(mine[f] !== undefined && mine[f] !== null, f)

    assert.equal((await call('POST', `/sandboxes/${id}/connect`, { timeout: 300 })).status, 200)
    assert.equal((await call('POST', `/sandboxes/${id}/timeout`, { timeout: 600 })).status, 204)
    assert.equal((await call('POST', `/sandboxes/${id}/pause`, { memory: true })).status, 204)
    isError(await call('POST', `/sandboxes/${id}/pause`, { memory: true }), 409)
    assert.equal((await call('GET', '/sandboxes')).body.some((s) => s.sandboxID === id), false) // running only
    const resumed = await call('POST', `/sandboxes/${id}/connect`, { timeout: 300 })
    assert.equal(resumed.status, 201)
    for (const f of REQUIRED_SANDBOX) assert.ok(resumed.body[f] !== undefined, f)
    assert.equal((await call('GET', `/sandboxes/${id}/metrics`)).status, 200)
  } finally {
    assert.equal((await call('DELETE', `/sandboxes/${id}`)).status, 204)
  }
  isError(await call('DELETE', `/sandboxes/${id}`), 404)
  isError(await call('GET', `/sandboxes/${id}`), 404)
  isError(await call('POST', `/sandboxes/${id}/timeout`, { timeout: 60 }), 404)
})

test('errors: a bad body, an unknown key, what space does not offer', async () => {
  isError(await call('POST', '/sandboxes', { templateID: 'base', timeout: 'soon' }), 400)
  isError(await call('POST', '/sandboxes', { templateID: 'no-such-template' }), 404)
  const r = await fetch(api + '/sandboxes', { headers: { 'X-API-KEY': 'e2b_00' } })
  assert.equal(r.status, 401)
  assert.equal((await r.json()).code, 401)
  isError(await call('GET', '/sandboxes/000000000000/logs'), 501)
})
