"""sandbox/interpreter/py_kernel.py - the python kernel of the code interpreter (server.py, its
kernelspec space-python3): Debian's ipykernel, started with its IOPub thread's pipe off.

That pipe carries the output of processes forked from the kernel, through a ZeroMQ socket
listening on loopback TCP; gVisor (runsc 20221219) cannot save a listening TCP socket that a
thread waits on, so with it a sandbox of the template could not be suspended. Without it, what
a forked child writes to sys.stdout stays in that child (a subprocess's own output, written to
its file descriptors, reaches the cell as before).
"""

from ipykernel import iostream, kernelapp

_init = iostream.IOPubThread.__init__


def _without_pipe(self, socket, pipe=False):
    _init(self, socket, pipe=False)


iostream.IOPubThread.__init__ = _without_pipe

if __name__ == "__main__":
    kernelapp.launch_new_instance()
