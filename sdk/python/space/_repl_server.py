"""The code interpreter that runs inside a sandbox (shipped as text, run with python3 -u -c).

Usage: python3 -u -c 'import sys; exec(sys.argv.pop())' --space-code-context NAME TOKEN <this file>

It reads one JSON request a line on its standard input,
    {"id": "<cell id>", "code": "<python source>"}
and runs each cell in one namespace that lives as long as the process, like
a notebook kernel. The cell's own output goes to the process's stdout and
stderr as it is produced, framed by markers that carry TOKEN, so the client
can tell cells apart and find the result:

    MARK "B:" id "\\n"                 on stdout and stderr: the cell starts
    ... the cell's output ...
    MARK "E:" id "\\n"                 on stderr: the cell ended
    MARK "E:" id ":" json "\\n"        on stdout: the result
                                       {"text": repr of the last expression or null,
                                        "error": {"name", "message", "traceback"} or null}

where MARK is "\\x1e\\x1fspace-repl:" TOKEN ":". SIGINT interrupts the running
cell with KeyboardInterrupt (reported as its error; the namespace is kept)
and is ignored between cells. Standard input of cells (and of what they
start) is /dev/null. Written for any Python 3.6+, standard library only.
"""

import ast
import json
import linecache
import os
import signal
import sys
import traceback


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "--space-code-context":
        sys.stderr.write("usage: --space-code-context NAME TOKEN\n")
        return 2
    mark = ("\x1e\x1fspace-repl:" + sys.argv[3] + ":").encode("ascii")

    # requests come on the original stdin; cells see /dev/null
    requests = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    state = {"in_cell": False}

    def on_sigint(signum, frame):
        if state["in_cell"]:
            raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_sigint)

    ns = {"__name__": "__main__", "__doc__": None, "__builtins__": __builtins__}
    sys.argv = [""]
    counter = [0]

    def emit(fd, data):
        while data:
            n = os.write(fd, data)
            data = data[n:]

    def flush_std():
        for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                f.flush()
            except Exception:
                pass

    def run_cell(code):
        counter[0] += 1
        filename = "<cell-%d>" % counter[0]
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        text = error = None
        try:
            state["in_cell"] = True
            try:
                tree = ast.parse(code, filename, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                exec(compile(tree, filename, "exec"), ns)
                if last is not None:
                    value = eval(compile(last, filename, "eval"), ns)
                    if value is not None:
                        ns["_"] = value
                        text = repr(value)
            finally:
                state["in_cell"] = False
        except BaseException:
            etype, evalue, tb = sys.exc_info()
            while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
                tb = tb.tb_next
            try:
                message = str(evalue)
            except Exception:
                message = "<unprintable %s>" % etype.__name__
            error = {"name": etype.__name__, "message": message,
                     "traceback": "".join(traceback.format_exception(etype, evalue, tb))}
            del tb
        return text, error

    while True:
        try:
            line = requests.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return 0
        try:
            req = json.loads(line.decode("utf-8"))
            cid = str(req["id"]).encode("ascii")
            code = req["code"]
        except (ValueError, KeyError, TypeError, UnicodeError):
            continue
        emit(1, mark + b"B:" + cid + b"\n")
        emit(2, mark + b"B:" + cid + b"\n")
        try:
            text, error = run_cell(code)
        except KeyboardInterrupt:  # landed just outside the cell's own handler
            text, error = None, {"name": "KeyboardInterrupt", "message": "", "traceback": "KeyboardInterrupt\n"}
        flush_std()
        result = json.dumps({"text": text, "error": error}, ensure_ascii=True)
        emit(2, mark + b"E:" + cid + b"\n")
        emit(1, mark + b"E:" + cid + b":" + result.encode("ascii") + b"\n")


if __name__ == "__main__":
    sys.exit(main())
