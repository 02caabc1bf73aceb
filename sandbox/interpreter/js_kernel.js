// sandbox/interpreter/js_kernel.js - one javascript context of the code interpreter (server.py,
// docs/e2b.md "Code Interpreter"): a Node.js process that runs cells in one context of its own,
// so what a cell declares (let, const, function, class) is there for the next, and a cell may
// await at its top level. It is Node's REPL evaluator (the repl module) without its terminal.
//
// server.py writes one cell a line on stdin, as JSON: {"code"}. For each, this writes JSON
// lines on stdout, as server.py hands them to the client: {"type": "stdout"|"stderr", "text"}
// (console.log, process.stdout.write; console.error, process.stderr.write), {"type": "result",
// "is_main_result": true, "text"} (the cell's last value, as util.inspect shows it, unless
// undefined), {"type": "error", "name", "value", "traceback"}, then {"type": "end"}.
// SIGINT ends the running cell with an error (a loop that never ends, an await that never
// settles) and leaves the context as the cell left it.
'use strict'

const fs = require('node:fs')
const repl = require('node:repl')
const readline = require('node:readline')
const util = require('node:util')
const vm = require('node:vm')
const { Console } = require('node:console')
const { PassThrough, Writable } = require('node:stream')

function send (event) {
  fs.writeSync(1, JSON.stringify(event) + '\n')
}

// A stream whose writes are events of the cell that runs.
function eventStream (type) {
  return new Writable({
    write (chunk, encoding, done) {
      send({ type, text: chunk.toString() })
      done()
    }
  })
}

const stdout = eventStream('stdout')
const stderr = eventStream('stderr')
// what the code writes to process.stdout and process.stderr becomes events too: file
// descriptor 1 carries only events
for (const [name, stream] of [['stdout', stdout], ['stderr', stderr]]) {
  process[name].write = (chunk, encoding, done) => {
    stream.write(typeof chunk === 'string' ? chunk : Buffer.from(chunk))
    if (typeof encoding === 'function') encoding()
    else if (typeof done === 'function') done()
    return true
  }
}

// The REPL's evaluator, fed whole cells: its terminal is a stream nobody writes to, and what it
// prints of its own (its prompt) goes nowhere.
const server = repl.start({
  input: new PassThrough(),
  output: new Writable({ write (chunk, encoding, done) { done() } }),
  prompt: '',
  terminal: false,
  useGlobal: false,
  ignoreUndefined: true
})
server.context.console = new Console({ stdout, stderr })

// The cell that runs: the function that ends it (with an error, or null and its value).
let running = null

// The evaluator hands what a cell throws (or rejects with) to its domain, not to its callback:
// that is the cell's error. One thrown later, by a timer or a promise of a cell that ended, is
// stderr of the cell that runs then (or of none).
server._domain.removeAllListeners('error')
server._domain.on('error', (err) => {
  if (running) running(err)
  else send({ type: 'stderr', text: 'Uncaught ' + util.inspect(err) + '\n' })
})

class Interrupted extends Error {
  constructor () {
    super('the cell was interrupted (SIGINT)')
    this.name = 'KeyboardInterrupt'
  }
}

// A cell that waits (an await): SIGINT ends it here. One that runs is stopped by V8 (the
// script's breakOnSigint), and this handler does not run then.
process.on('SIGINT', () => {
  if (running) running(new Interrupted())
})

// Runs code in the context; done(err, value) once. A cell that compiles as a script runs as
// one, so that SIGINT stops even a loop; one that awaits at its top level goes through the
// REPL's evaluator, which rewrites it into an async function that keeps its declarations.
function evaluate (code, done) {
  let script
  try {
    script = new vm.Script(code, { filename: 'cell' })
  } catch (err) {
    if (err instanceof SyntaxError && code.includes('await')) return server.eval(code, server.context, 'cell', done)
    return done(err)
  }
  let value
  try {
    value = script.runInContext(server.context, { breakOnSigint: true, displayErrors: false })
  } catch (err) {
    return done(/interrupted by .SIGINT/.test(err && err.message) ? new Interrupted() : err)
  }
  done(null, value)
}

// A stack without the frames of the evaluator that ran the cell (vm, repl, domain, this file).
function cellStack (stack) {
  const lines = String(stack || '').split('\n')
  const at = lines.findIndex((l) => /^\s+at /.test(l) && (/\(?node:(vm|repl|domain|internal)/.test(l) || l.includes(__filename)))
  return (at < 0 ? lines : lines.slice(0, at)).join('\n')
}

function errorEvent (err) {
  if (err && err.err && err instanceof SyntaxError) err = err.err // the REPL's Recoverable: an incomplete cell
  if (err && typeof err === 'object' && 'stack' in err) {
    return { type: 'error', name: String(err.name || 'Error'), value: String(err.message || ''), traceback: cellStack(err.stack) }
  }
  return { type: 'error', name: 'Error', value: util.inspect(err), traceback: 'Uncaught ' + util.inspect(err) }
}

const cells = []
let closed = false // stdin ended: exit once the cells given are run

function next () {
  if (!running && cells.length === 0 && closed) process.exit(0)
  if (running || cells.length === 0) return
  const { code } = cells.shift()
  running = (err, value) => {
    running = null
    if (err) send(errorEvent(err))
    else if (value !== undefined) send({ type: 'result', is_main_result: true, text: util.inspect(value) })
    send({ type: 'end' })
    setImmediate(next)
  }
  evaluate(code, (err, value) => running && running(err, value))
}

readline.createInterface({ input: process.stdin, terminal: false }).on('line', (line) => {
  let cell
  try {
    cell = JSON.parse(line)
  } catch (e) {
    send({ type: 'error', name: 'ProtocolError', value: 'a cell is one line of JSON', traceback: '' })
    send({ type: 'end' })
    return
  }
  cells.push(cell)
  next()
}).on('close', () => {
  closed = true
  next()
})
