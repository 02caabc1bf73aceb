// tests/compat/programs/compat.js - what tests/compat runs with Node.js, natively and in a
// sandbox: threads (worker_threads), files, a TCP server and client on loopback, and 300 MiB
// allocated and touched. Prints one "ok ..." line per step and "compat ok" at the end; any
// failure exits non-zero.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { Worker } = require('worker_threads');

const WORKERS = 4;
const MEM_MIB = 300;

function fail(step, err) {
  console.error(`FAIL ${step}: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
}

// Each worker thread writes its own file of 1 MiB and answers with its hash; then the main
// thread reads the files back.
async function threadsAndFiles(dir) {
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const crypto = require('crypto'), fs = require('fs');
    const data = Buffer.alloc(1 << 20, 97 + workerData.i);
    fs.writeFileSync(workerData.file, data);
    parentPort.postMessage(crypto.createHash('sha256').update(data).digest('hex'));`;
  const jobs = [];
  for (let i = 0; i < WORKERS; i++) {
    const file = path.join(dir, `w${i}`);
    jobs.push(new Promise((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData: { i, file } });
      w.once('message', (sum) => resolve({ file, sum }));
      w.once('error', reject);
      w.once('exit', (c) => c !== 0 && reject(new Error(`worker exited ${c}`)));
    }));
  }
  const done = await Promise.all(jobs).catch((e) => fail('threads', e));
  console.log(`ok threads ${WORKERS}`);
  for (const { file, sum } of done) {
    const got = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
    if (got !== sum) fail('files', `${file} reads back different bytes`);
  }
  console.log(`ok files ${WORKERS} MiB`);
}

// A server on 127.0.0.1 (a port the kernel picks) echoes what one client sends.
function loopbackTcp() {
  return new Promise((resolve) => {
    const server = net.createServer((c) => c.pipe(c));
    server.on('error', (e) => fail('tcp listen', e));
    server.listen(0, '127.0.0.1', () => {
      const msg = Buffer.from('loopback '.repeat(100000));
      const chunks = [];
      const c = net.connect(server.address().port, '127.0.0.1', () => c.end(msg));
      c.on('error', (e) => fail('tcp', e));
      c.on('data', (d) => chunks.push(d));
      c.on('end', () => {
        const got = Buffer.concat(chunks);
        if (!got.equals(msg)) fail('tcp', `echoed ${got.length} bytes of ${msg.length}, or different ones`);
        console.log(`ok tcp ${got.length} bytes`);
        server.close(resolve);
      });
    });
  });
}

// 300 MiB in 1 MiB buffers, a byte written in every page of each.
function memory() {
  const blocks = [];
  for (let i = 0; i < MEM_MIB; i++) {
    const b = Buffer.allocUnsafeSlow(1 << 20);
    for (let j = 0; j < b.length; j += 4096) b[j] = i & 255;
    blocks.push(b);
  }
  let sum = 0, want = 0;
  for (let i = 0; i < MEM_MIB; i++) {
    for (let j = 0; j < blocks[i].length; j += 4096) sum += blocks[i][j];
    want += 256 * (i & 255);
  }
  if (sum !== want) fail('memory', `read back ${sum}, wrote ${want}`);
  console.log(`ok memory ${MEM_MIB} MiB`);
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compat-node-'));
  try {
    await threadsAndFiles(dir);
    await loopbackTcp();
    memory();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log('compat ok');
})().catch((e) => fail('unexpected', e));
