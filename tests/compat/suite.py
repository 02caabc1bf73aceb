"""What tests/compat runs: the CPython test modules, the runtime programs, and the template.

Each CPython module is one of Debian's libpython3.11-testsuite, run with `python3 -m test`,
natively (as root, in a fresh directory) and in a fresh sandbox of the compat template (as root,
in /work). A few tests that hang or cannot mean anything on *both* sides are left out with
IGNORE, each with its reason; everything else runs.

QUICK is what `make test` runs (make compat-quick): modules that finish in seconds in a sandbox
and still touch processes, files, sockets on loopback, signals, threads and terminals, plus
the three runtimes.
"""

# spaced --template compat=... ; the host installs the same packages for the native side.
TEMPLATE = "compat"
# netbase (/etc/services) and libpython3.11-dev (pyconfig.h, the config Makefile) are what a
# Debian host with a compiler has and test_socket and test_sysconfig look for.
PACKAGES = ["default-jdk-headless", "golang", "libpython3.11-dev", "libpython3.11-testsuite", "netbase", "nodejs"]

# A module's wall-clock limit on either side, seconds; LONG ones get more. The longest module
# takes about 2 minutes natively and 3.5 in a sandbox here.
TIMEOUT = 300
LONG = {
    "test_multiprocessing_fork": 600,
    "test_multiprocessing_forkserver": 600,
    "test_multiprocessing_spawn": 600,
    "test_concurrent_futures": 600,
}

# The sandbox a CPython module runs in: two CPUs (regrtest and the tests' own children run in
# parallel, as on the host) and 2 GiB.
MODULE_SANDBOX = {"cpus": 2, "memory_mb": 2048}

# CPython test modules, by what they exercise.
MODULES = [
    # processes
    "test_os", "test_posix", "test_subprocess", "test_popen", "test_fork1", "test_wait3", "test_wait4",
    "test_resource", "test_multiprocessing_fork", "test_multiprocessing_forkserver",
    "test_multiprocessing_spawn", "test_concurrent_futures", "test_cmd_line", "test_cmd_line_script",
    "test_atexit", "test_faulthandler", "test_platform", "test_sysconfig", "test_sys",
    # files and file systems
    "test_io", "test_fileio", "test_file", "test_file_eintr", "test_largefile", "test_fcntl",
    "test_shutil", "test_tempfile", "test_threadedtempfile", "test_pathlib", "test_glob", "test_stat",
    "test_posixpath", "test_filecmp", "test_fileinput", "test_tarfile", "test_zipfile",
    "test_zipimport", "test_compileall", "test_py_compile", "test_dbm", "test_shelve",
    "test_mailbox", "test_logging", "test_unicode_file",
    # sockets on loopback, and what runs on them
    "test_socket", "test_socketserver", "test_select", "test_selectors", "test_poll", "test_epoll",
    "test_httpservers", "test_httplib", "test_urllib2_localnet", "test_xmlrpc", "test_docxmlrpc",
    "test_wsgiref", "test_ssl", "test_asyncio.test_events", "test_asyncio.test_subprocess",
    "test_asyncio.test_sock_lowlevel", "test_asyncio.test_unix_events", "test_asyncio.test_server",
    "test_asyncio.test_streams",
    # signals and threads
    "test_signal", "test_eintr", "test_threading", "test_thread", "test_threadsignals",
    "test_threading_local", "test_queue", "test_sched",
    # terminals and users
    "test_pty", "test_openpty", "test_ioctl", "test_getpass", "test_pwd", "test_grp", "test_readline",
    # time and memory
    "test_time", "test_datetime", "test_mmap", "test_gc", "test_weakref", "test_tracemalloc",
    "test_memoryio", "test_memoryview", "test_array", "test_struct",
    # data formats (little kernel, much computation and file I/O)
    "test_errno", "test_json", "test_pickle", "test_zlib", "test_gzip", "test_bz2", "test_lzma",
    "test_hashlib", "test_uuid",
]

# Tests left out on both sides, by module: regrtest --ignore patterns, each with its reason.
IGNORE = {
    "test_socket": [
        ("*VSOCK*", "this host has a VSOCK device but nothing answers on it: "
                    "ThreadedVSOCKSocketStreamTest waits for ever natively"),
    ],
}

# regrtest resources a module gets beyond run.py's RESOURCES, each with its reason.
RESOURCES = {
    "test_socketserver": ("network", "it asks for the network resource as a whole, but its servers and "
                                     "clients only use localhost and Unix sockets"),
}

QUICK = ["test_errno", "test_os", "test_posix", "test_fcntl", "test_fork1", "test_wait4", "test_popen",
         "test_select", "test_epoll", "test_asyncio.test_sock_lowlevel", "test_threading_local",
         "test_threadsignals", "test_file_eintr", "test_tempfile", "test_stat", "test_openpty", "test_getpass"]


class Runtime:
    """A runtime program: the files it needs, the command that runs it, and how to name the
    runtime's version (the first line of its output)."""

    def __init__(self, name, files, argv, version, timeout=600):
        self.name = name
        self.files = files
        self.argv = argv
        self.version = version
        self.timeout = timeout


RUNTIMES = [
    Runtime("nodejs", ["compat.js"], ["/usr/bin/node", "compat.js"], ["/usr/bin/node", "--version"]),
    # `java File.java` compiles the source in memory: it needs the JDK's compiler module, which
    # the JRE (default-jre-headless) does not have, hence default-jdk-headless. The 300 MiB are
    # direct buffers, which the JVM caps at its heap's size unless told.
    Runtime("java", ["Compat.java"], ["/usr/bin/java", "-XX:MaxDirectMemorySize=320m", "Compat.java"],
            ["/usr/bin/java", "-version"]),
    Runtime("golang", ["compat.go"], ["/usr/bin/go", "run", "compat.go"], ["/usr/bin/go", "version"]),
]


if __name__ == "__main__":
    print(" ".join(PACKAGES))  # for the Makefile's compat-deps
