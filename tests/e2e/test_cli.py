"""The README, line by line, through the `space` command.

Each test runs build/space against the session's spaced, as a user at a shell
would, and checks what that user sees: stdout, stderr, the exit status.
"""

import json
import os
import re
import subprocess

import pytest

from conftest import IO_TIMEOUT, q, gvisor_only

ID_LINE = re.compile(r"\A[0-9a-f]{12}\n\Z")


@pytest.fixture
def cli_sandbox(cli, api):
    """A sandbox made with `space create`; removed after the test whatever happened."""
    r = cli("create")
    assert r.returncode == 0, r.stderr
    sbid = r.stdout.strip()
    yield sbid
    api.delete(sbid)


def ids(api):
    return {sb["id"] for sb in api.ok("GET", "/v1/sandboxes")["sandboxes"]}


@gvisor_only("it checks the operator's default kind, gvisor")
def test_create_isolation_shows_in_inspect_ls_and_status(cli, api):
    r = cli("create", "--isolation", "gvisor")
    assert r.returncode == 0, r.stderr
    assert ID_LINE.match(r.stdout), f"space create printed {r.stdout!r}"
    sbid = r.stdout.strip()
    try:
        assert json.loads(cli("inspect", sbid).stdout)["isolation"] == "gvisor"
        ls = cli("ls").stdout.splitlines()
        col = ls[0].split().index("ISOLATION")
        assert col == ls[0].split().index("TEMPLATE") + 1, ls[0]
        assert [line.split()[col] for line in ls[1:] if line.split()[0] == sbid] == ["gvisor"], ls
        st = cli("status")
        assert st.returncode == 0, st.stderr
        runtime = api.ok("GET", "/v1/version")["isolation"]["available"]["gvisor"]
        assert re.search(rf"^isolation:\s+gvisor \(default\): {re.escape(runtime)}$", st.stdout, re.M), st.stdout
        assert re.search(r"^\s+microvm: ", st.stdout, re.M), st.stdout
    finally:
        api.delete(sbid)


def test_create_and_run_with_a_kind_the_host_cannot_run_say_why_and_leave_nothing(cli, api):
    why = api.ok("GET", "/v1/version")["isolation"]["unavailable"].get("microvm")
    if why is None:
        pytest.skip("microvm runs on this host")
    before = ids(api)
    r = cli("create", "--isolation", "microvm")
    assert (r.returncode, r.stdout) == (1, ""), r
    assert "isolation microvm is unavailable" in r.stderr and why in r.stderr, r.stderr
    r = cli("run", "--isolation", "microvm", "--", "true")
    assert r.returncode == 125 and why in r.stderr, r
    r = cli("create", "--isolation", "firecracker")
    assert r.returncode == 1 and '"gvisor", "microvm"' in r.stderr, r
    assert ids(api) == before
    assert re.search(rf"^\s+microvm: unavailable \({re.escape(why)}\)$", cli("status").stdout, re.M)


def test_run_prints_42_and_leaves_nothing(cli, api):
    before = ids(api)
    r = cli("run", "--", "python3", "-c", "print(6*7)")
    assert (r.returncode, r.stdout) == (0, "42\n"), r.stderr
    assert ids(api) == before, "space run left its sandbox behind"


def test_run_exits_with_the_command_status(cli):
    r = cli("run", "--", "sh", "-c", "exit 9")
    assert r.returncode == 9, r.stderr


def test_create_prints_the_id_alone_and_ls_inspect_rm_follow_it(cli, api):
    r = cli("create")
    assert r.returncode == 0, r.stderr
    assert ID_LINE.match(r.stdout), f"space create printed {r.stdout!r}"
    sbid = r.stdout.strip()
    try:
        ls = cli("ls")
        assert ls.returncode == 0, ls.stderr
        assert any(line.split()[:2] == [sbid, "running"] for line in ls.stdout.splitlines()), ls.stdout

        ins = cli("inspect", sbid)
        assert ins.returncode == 0, ins.stderr
        obj = json.loads(ins.stdout)
        obj = obj[0] if isinstance(obj, list) else obj
        assert obj["id"] == sbid and obj["state"] == "running"

        rm = cli("rm", sbid)
        assert rm.returncode == 0, rm.stderr
        assert sbid in rm.stdout
        assert sbid not in ids(api)
        assert sbid not in cli("ls").stdout
        again = cli("inspect", sbid)
        assert again.returncode != 0
    finally:
        api.delete(sbid)


def test_create_takes_options(cli, api):
    r = cli("create", "--cpus", "2", "--memory", "256", "--disk", "128", "--label", "team=e2e", "--env",
            "GREETING=hi")
    assert r.returncode == 0, r.stderr
    sbid = r.stdout.strip()
    try:
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert (sb["cpus"], sb["memory_mb"], sb["disk_mb"], sb["metadata"]) == (2, 256, 128, {"team": "e2e"})
        ex = cli("exec", sbid, "--", "sh", "-c", "echo $GREETING")
        assert (ex.returncode, ex.stdout) == (0, "hi\n"), ex.stderr
        ls = cli("ls", "--label", "team=e2e", "-q")
        assert ls.stdout.split() == [sbid]
    finally:
        api.delete(sbid)


def test_exec_splits_stdout_stderr_and_exits_with_the_status(cli, cli_sandbox):
    r = cli("exec", cli_sandbox, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3
    assert r.stdout == "out\n"
    assert r.stderr == "err\n"


def test_exec_says_when_the_memory_limit_killed_a_process(cli, cli_sandbox):
    r = cli("exec", cli_sandbox, "--", "python3", "-c", "a = []\nwhile True: a.append(b'x' * (16 << 20))")
    assert r.returncode == 137, r
    assert "was killed: the sandbox's memory reached its limit (512 MiB)" in r.stderr, r.stderr


def test_exec_of_a_missing_command_exits_127(cli, cli_sandbox):
    r = cli("exec", cli_sandbox, "--", "no-such-command-here")
    assert r.returncode == 127
    assert r.stdout == ""
    assert r.stderr.strip(), "no word about why"


def test_exec_exit_statuses_follow_docker(cli, cli_sandbox):
    killed = cli("exec", cli_sandbox, "--", "sh", "-c", "kill -9 $$")
    assert killed.returncode == 137
    timed = cli("exec", "--timeout", "0.5", cli_sandbox, "--", "sleep", "1000")
    assert timed.returncode == 137
    assert "timed out" in timed.stderr
    not_exec = cli("exec", cli_sandbox, "--", "/etc/passwd")
    assert not_exec.returncode == 126 and not_exec.stderr.strip()
    gone = cli("rm", "000000000000")
    assert gone.returncode == 1 and "000000000000" in gone.stderr
    assert cli("rm", "-f", "000000000000").returncode == 0


def test_cp_in_wc_and_cp_back(cli, cli_sandbox, tmp_path):
    rows = "".join(f"{i},{i * i},row {i}\n" for i in range(1000))
    (tmp_path / "data.csv").write_text(rows)
    up = cli("cp", "./data.csv", f"{cli_sandbox}:/work/data.csv", cwd=tmp_path)
    assert up.returncode == 0, up.stderr

    wc = cli("exec", cli_sandbox, "--", "wc", "-l", "/work/data.csv")
    assert (wc.returncode, wc.stdout) == (0, "1000 /work/data.csv\n"), wc.stderr

    down = cli("cp", f"{cli_sandbox}:/work/data.csv", "./back.csv", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert (tmp_path / "back.csv").read_bytes() == (tmp_path / "data.csv").read_bytes()
    assert up.stderr == down.stderr == ""  # no progress where stderr is not a terminal


def cp_on_a_terminal(cli, *args, cwd):
    """space cp ARGS with its stderr a terminal: (exit status, what the terminal got)."""
    import pty
    master, slave = pty.openpty()
    try:
        p = cli.popen("cp", *args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed, the copy is over
                break
            if not chunk:
                break
            seen += chunk
        return p.wait(IO_TIMEOUT), seen.decode()
    finally:
        os.close(master)


def test_cp_shows_its_progress_on_a_terminal(cli, cli_sandbox, tmp_path):
    (tmp_path / "big.bin").write_bytes(os.urandom(1 << 20) * 24)  # 24 MiB
    status, seen = cp_on_a_terminal(cli, "./big.bin", f"{cli_sandbox}:/work/big.bin", cwd=tmp_path)
    assert status == 0, seen
    assert "./big.bin  24.0 MiB of 24.0 MiB  100%" in seen and seen.endswith("\r\n"), seen
    status, seen = cp_on_a_terminal(cli, f"{cli_sandbox}:/work/big.bin", "./back.bin", cwd=tmp_path)
    assert status == 0, seen
    assert "./back.bin  24.0 MiB of 24.0 MiB  100%" in seen, seen
    assert (tmp_path / "back.bin").read_bytes() == (tmp_path / "big.bin").read_bytes()


def test_cp_of_a_missing_file_fails_cleanly(cli, cli_sandbox, tmp_path):
    r = cli("cp", f"{cli_sandbox}:/work/nope.csv", "./nope.csv", cwd=tmp_path)
    assert r.returncode != 0
    assert r.stderr.strip()
    assert not (tmp_path / "nope.csv").exists(), "a failed copy left a file behind"


def test_ls_json_lists_sandbox_objects(cli, cli_sandbox):
    r = cli("ls", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    sandboxes = data["sandboxes"] if isinstance(data, dict) else data
    mine = [sb for sb in sandboxes if sb["id"] == cli_sandbox]
    assert len(mine) == 1 and mine[0]["state"] == "running"


def test_ps_lists_the_processes_run(cli, cli_sandbox):
    assert cli("exec", cli_sandbox, "--", "echo", "marker-for-ps").returncode == 0
    r = cli("ps", cli_sandbox)
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.splitlines() if "marker-for-ps" in l]
    assert line and "exited" in line[0], r.stdout
    j = cli("ps", "--json", cli_sandbox)
    assert j.returncode == 0, j.stderr
    data = json.loads(j.stdout)
    procs = data["processes"] if isinstance(data, dict) else data
    assert any("marker-for-ps" in p["cmd"] and p["exit_code"] == 0 for p in procs)


def test_status_version_and_template_ls(cli):
    st = cli("status")
    assert st.returncode == 0, st.stderr
    assert re.search(r"^status:\s+ok$", st.stdout, re.M), st.stdout

    v = cli("version")
    assert v.returncode == 0, v.stderr
    assert re.search(r"client: \d+\.\d+\.\d+", v.stdout), v.stdout
    assert re.search(r"server: \d+\.\d+\.\d+", v.stdout), v.stdout

    t = cli("template", "ls")
    assert t.returncode == 0, t.stderr
    assert any(line.split()[:1] == ["default"] for line in t.stdout.splitlines()), t.stdout


def test_exec_detach_prints_a_pid_and_attach_streams_it(cli, api, cli_sandbox):
    script = "echo started; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo finished; exit 4"
    d = cli("exec", "-d", cli_sandbox, "--", "sh", "-c", script)
    assert d.returncode == 0, d.stderr
    assert re.fullmatch(r"\d+\n", d.stdout), f"space exec -d printed {d.stdout!r}"
    pid = d.stdout.strip()

    att = cli.popen("attach", cli_sandbox, pid, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = att.stdout.readline()
        assert first == b"started\n"
        # Only now let the process go on: what follows must arrive live.
        api.ok("PUT", f"/v1/sandboxes/{cli_sandbox}/files?path={q('/tmp/go')}", raw=b"")
        rest = att.stdout.read()
        assert rest == b"finished\n"
        assert att.wait(timeout=IO_TIMEOUT) == 4, att.stderr.read()
    finally:
        if att.poll() is None:
            att.kill()
            att.wait()


def test_exec_output_drop_and_attach_says_what_was_dropped(cli, api, cli_sandbox):
    bad = cli("exec", "-d", "--output", "lose", cli_sandbox, "--", "true")
    assert bad.returncode == 125 and "--output wants block or drop" in bad.stderr, bad
    script = "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo end"
    d = cli("exec", "-d", "--output", "drop", cli_sandbox, "--", "sh", "-c", script)
    assert d.returncode == 0, d.stderr
    pid = d.stdout.strip()
    done = api.ok("GET", f"/v1/sandboxes/{cli_sandbox}/processes/{pid}/wait?timeout={IO_TIMEOUT}")
    assert (done["state"], done["output"]) == ("exited", "drop"), done  # finished unread
    att = cli("attach", cli_sandbox, pid)
    assert att.returncode == 0, att.stderr
    assert att.stdout.endswith("x\nend\n") and len(att.stdout) <= 64 * 1024, len(att.stdout)
    dropped = int(re.search(r"space: (\d+) bytes of output were dropped, unread", att.stderr).group(1))
    assert dropped + len(att.stdout) == 1000000 + len("\nend\n"), (dropped, len(att.stdout))


def test_exec_interactive_passes_stdin(cli, cli_sandbox):
    text = "hello\nworld\n" * 1000
    r = cli("exec", "-i", cli_sandbox, "--", "python3", "-c",
            "import sys; d = sys.stdin.read(); print(len(d)); print(d.upper(), end='')", input=text)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{len(text)}\n" + text.upper()


def test_exec_without_i_gives_no_stdin(cli, cli_sandbox):
    r = cli("exec", cli_sandbox, "--", "wc", "-c", input="this must not arrive\n")
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr


def test_a_daemon_that_is_not_running_gets_one_helpful_line(cli):
    r = cli("ls", env={"SPACE_HOST": "unix:///nonexistent.sock"})
    assert r.returncode != 0
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert "spaced" in line and "start" in line.lower(), line
    for jargon in ("curl", "CURLE", "Couldn't", "errno", "(7)"):
        assert jargon not in line, line
