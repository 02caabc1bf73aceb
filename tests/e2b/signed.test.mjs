// tests/e2b/signed.test.mjs - signed file URLs through the unmodified SDK: uploadUrl and
// downloadUrl of a secure sandbox work with a plain fetch (no headers), as the SDK's user or
// another, with or without an expiration; a signature that is wrong, tampered with, for the
// other operation or expired is 401 and reads or writes nothing.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from './helpers.mjs'

let sb
before(async () => { sb = await Sandbox.create({ secure: true }) })
after(async () => { await sb.kill() })

function form (data, name = 'up') {
  const f = new FormData()
  f.append('file', new Blob([data]), name)
  return f
}

test('uploadUrl and downloadUrl work with a plain fetch', async () => {
  const up = await sb.uploadUrl('/home/user/signed/up.txt')
  assert.match(up, /[?&]signature=v1_/)
  let r = await fetch(up, { method: 'POST', body: form('signed hello') })
  assert.equal(r.status, 200, await r.clone().text())
  assert.deepEqual((await r.json()).map((e) => e.path), ['/home/user/signed/up.txt'])
  // the default user's, as a write of the SDK's own
  assert.equal((await sb.files.getInfo('/home/user/signed/up.txt')).owner, 'user')
  r = await fetch(await sb.downloadUrl('/home/user/signed/up.txt'))
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'signed hello')
  // a relative path is the default user's home's; a user named is signed with it
  r = await fetch(await sb.uploadUrl('rel.txt'), { method: 'POST', body: form('rel') })
  assert.deepEqual((await r.json()).map((e) => e.path), ['/home/user/rel.txt'])
  r = await fetch(await sb.uploadUrl('/root/by-root', { user: 'root' }), { method: 'POST', body: form('r') })
  assert.equal(r.status, 200)
  assert.equal((await sb.files.getInfo('/root/by-root', { user: 'root' })).owner, 'root')
  r = await fetch(await sb.downloadUrl('/root/by-root', { user: 'root' }))
  assert.equal(await r.text(), 'r')
  // an expiration still ahead
  r = await fetch(await sb.downloadUrl('rel.txt', { useSignatureExpiration: 60 }))
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'rel')
})

test('a signature that is wrong, tampered with, for the other operation or expired is 401 and does nothing', async () => {
  await sb.files.write('/home/user/secret.txt', 'secret')
  // refused on the request's head, before its body is read: the connection is closed after the
  // answer, so a client still sending an upload may see the close (EPIPE) rather than the 401
  const refused = async (url, init) => {
    const r = await fetch(url, init).catch((e) => e)
    if (init?.method === 'POST' && /EPIPE|ECONNRESET|other side closed/.test(String(r.cause))) return ''
    assert.equal(r.status, 401, String(r.cause ?? url))
    const body = await r.json()
    assert.equal(body.code, 401)
    return body.message
  }
  const down = new URL(await sb.downloadUrl('/home/user/secret.txt'))
  // another path under the same signature
  const other = new URL(down)
  other.searchParams.set('path', '/etc/shadow')
  assert.match(await refused(other), /not valid/)
  // another user
  const asRoot = new URL(down)
  asRoot.searchParams.set('username', 'root')
  await refused(asRoot)
  // a signature not made by any sandbox
  const forged = new URL(down)
  forged.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  await refused(forged)
  // a read's signature does not write
  assert.match(await refused(down, { method: 'POST', body: form('overwritten') }), /not valid|^$/)
  assert.equal(await sb.files.read('/home/user/secret.txt'), 'secret')
  // an upload URL of another path writes nothing
  const up = new URL(await sb.uploadUrl('/home/user/allowed.txt'))
  up.searchParams.set('path', '/home/user/not-allowed.txt')
  await refused(up, { method: 'POST', body: form('x') })
  assert.equal(await sb.files.exists('/home/user/not-allowed.txt'), false)
  // expired, and an expiration moved later than the one signed
  assert.match(await refused(await sb.downloadUrl('/home/user/secret.txt', { useSignatureExpiration: -10 })), /expired/)
  const later = new URL(await sb.downloadUrl('/home/user/secret.txt', { useSignatureExpiration: 30 }))
  later.searchParams.set('signature_expiration', String(Number(later.searchParams.get('signature_expiration')) + 3600))
  await refused(later)
  const expiredUp = await sb.uploadUrl('/home/user/late.txt', { useSignatureExpiration: -10 })
  await refused(expiredUp, { method: 'POST', body: form('late') })
  assert.equal(await sb.files.exists('/home/user/late.txt'), false)
})

test('a signed URL stops working once its sandbox is gone', async () => {
  const other = await Sandbox.create({ secure: true })
  await other.files.write('/home/user/x', 'x')
  const url = await other.downloadUrl('/home/user/x')
  assert.equal((await fetch(url)).status, 200)
  await other.kill()
  assert.equal((await fetch(url)).status, 401)
})
