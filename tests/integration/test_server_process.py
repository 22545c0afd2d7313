"""server_process through `ansible`: own session, state file, stop as a group, port check, host lock."""
import concurrent.futures
import fcntl
import os
import socket
import time

from tests.support.ansible import run_module
from tests.support.paths import PYTHON
from tests.support.polling import poll
from tests.support.procfs import alive as pid_alive

# A "server" with a child in its process group; it records both PIDs.
SERVER = ("import os, signal, subprocess, sys, time; "
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
          "open(sys.argv[1], 'w').write('%d %d' % (os.getpid(), child.pid)); "
          "time.sleep(600)")


def start(tmp_path, fingerprint="a", extra=None):
    args = {"state": "started", "argv": [PYTHON, "-c", SERVER, str(tmp_path / "pids")],
            "log_path": str(tmp_path / "log" / "server.log"), "state_file": str(tmp_path / "state" / "s.json"),
            "fingerprint": fingerprint}
    args.update(extra or {})
    return run_module("server_process", args)


def test_start_status_stop(tmp_path):
    # The start makes its directories first (the role's log and state directories, with their modes).
    made = [{"path": str(tmp_path / "log"), "mode": "0750"}, {"path": str(tmp_path / "state"), "mode": "0700"}]
    res = start(tmp_path, extra={"dirs": made})
    assert res["_rc"] == 0 and res["changed"] is True, res.get("msg")
    assert (res["dirs_created"], res["dirs_mode_set"]) == ([d["path"] for d in made], [])
    assert [os.stat(d["path"]).st_mode & 0o777 for d in made] == [0o750, 0o700]
    poll(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text(), what="server pids")
    leader, child = [int(x) for x in (tmp_path / "pids").read_text().split()]
    try:
        assert leader == res["pid"] and os.getsid(leader) == leader  # its own session
        assert os.stat(tmp_path / "state" / "s.json").st_mode & 0o777 == 0o600
        assert os.stat(tmp_path / "log" / "server.log").st_mode & 0o777 == 0o640
        again = start(tmp_path)
        assert again["_rc"] == 0 and again["changed"] is False and again["pid"] == leader
        other = start(tmp_path, fingerprint="b")
        assert other["_rc"] != 0 and "another configuration runs" in other["msg"]
        stop = run_module("server_process", {"state": "stopped", "state_file": str(tmp_path / "state" / "s.json"),
                                             "stop_timeout": 2})
        assert stop["_rc"] == 0 and stop["changed"] is True
        assert not pid_alive(leader) and not pid_alive(child)
        assert not (tmp_path / "state" / "s.json").exists()
        stop2 = run_module("server_process", {"state": "stopped", "state_file": str(tmp_path / "state" / "s.json")})
        assert stop2["_rc"] == 0 and stop2["changed"] is False
    finally:
        for pid in (leader, child):
            if pid_alive(pid):
                os.kill(pid, 9)


def test_port_in_use_names_the_holder(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        res = start(tmp_path, extra={"listen_host": "127.0.0.1", "listen_port": port})
        assert res["_rc"] != 0
        assert "port 127.0.0.1:%d is already in use by pid %d" % (port, os.getpid()) in res["msg"]
        assert not (tmp_path / "pids").exists()  # nothing was launched
    finally:
        holder.close()


def test_unwritable_log_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = start(tmp_path, extra={"log_path": str(blocker / "server.log")})
    assert res["_rc"] != 0 and "cannot create %s" % blocker in res["msg"]


# ---- the log redactor the sglang_server role puts in front of a server with a key --------

REDACTOR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "roles", "_server", "files", "log_redact.py")
KEY = "gf-REDACT-ME-9f2c41"
# Logs the key as real SGLang 0.5.23 does (srt/entrypoints/engine.py:
# logger.info(f"server_args={...}") with 'api_key' in the dict), also on stderr and cut
# across two writes; on SIGTERM it says so and exits 0 (a graceful drain).
KEY_SERVER = (
    "import os, signal, sys, time\n"
    "key = open(sys.argv[2]).read().split(': ', 1)[1].strip()\n"
    "def term(signum, frame):\n"
    "    print('[2026-12-03 05:00:09] got SIGTERM, draining', flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, term)\n"
    "print('[2026-12-03 05:00:00] server_args=' + repr({'model_path': '/m', 'api_key': key, 'port': 30000}),"
    " flush=True)\n"
    "sys.stderr.write('[2026-12-03 05:00:01] warn: key ' + key + '\\n'); sys.stderr.flush()\n"
    "sys.stdout.write('[2026-12-03 05:00:02] split ' + key[:5]); sys.stdout.flush(); time.sleep(0.2)\n"
    "sys.stdout.write(key[5:] + ' done\\n'); sys.stdout.flush()\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(600)\n")


def test_redactor_keeps_the_key_out_of_the_log_and_passes_sigterm_on(tmp_path):
    secret = tmp_path / "s.secret.yaml"
    secret.write_text("api-key: %s\n" % KEY)
    os.chmod(secret, 0o600)
    log = tmp_path / "log" / "server.log"
    res = start(tmp_path, extra={"argv": [PYTHON, REDACTOR, str(secret), "--",
                                          PYTHON, "-c", KEY_SERVER, str(tmp_path / "pids"), str(secret)]})
    assert res["_rc"] == 0, res.get("msg")
    wrapper = res["pid"]
    poll(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text(), what="server pid")
    server = int((tmp_path / "pids").read_text())
    try:
        poll(lambda: b" done\n" in log.read_bytes(), what="the server's lines in the log")
        text = log.read_text()
        assert KEY not in text and KEY[:5] not in text
        assert "'api_key': '<redacted>'" in text
        assert "warn: key <redacted>" in text and "split <redacted> done" in text
        assert os.stat(log).st_mode & 0o777 == 0o640
        # The supervisor's SIGTERM reaches the server through the redactor; the drain is logged.
        stop = run_module("server_process", {"state": "stopped", "state_file": str(tmp_path / "state" / "s.json"),
                                             "stop_timeout": 10})
        assert stop["_rc"] == 0 and stop["stop"]["graceful"] is True, stop
        assert not pid_alive(wrapper) and not pid_alive(server)
        assert "got SIGTERM, draining" in log.read_text()
        assert KEY not in log.read_text()
    finally:
        for pid in (wrapper, server):
            if pid_alive(pid):
                os.kill(pid, 9)


# ---- two runs against one server at once ------------------------------------------------

# A server that drains for a second after SIGTERM, so two stops are both waiting on it.
DRAINING = ("import os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda s, f: (time.sleep(1.0), sys.exit(0)))\n"
            "open(sys.argv[1], 'w').write('%d' % os.getpid())\n"
            "while True:\n"
            "    time.sleep(600)\n")


def test_two_stops_at_once_one_stops_the_other_finds_it_stopped(tmp_path):
    res = start(tmp_path, extra={"argv": [PYTHON, "-c", DRAINING, str(tmp_path / "pids")]})
    assert res["_rc"] == 0, res.get("msg")
    poll(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text(), what="server pid")
    try:
        args = {"state": "stopped", "state_file": str(tmp_path / "state" / "s.json"), "stop_timeout": 10}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            both = list(pool.map(lambda unused: run_module("server_process", args), range(2)))
        assert [r["_rc"] for r in both] == [0, 0], [r.get("msg") for r in both]
        stopped = [r for r in both if r["changed"]]
        found = [r for r in both if not r["changed"]]
        assert len(stopped) == 1 and stopped[0]["stop"]["was_running"] is True
        assert len(found) == 1 and found[0]["stop"]["was_running"] is False
        assert "already stopped" in found[0]["msg"]
        assert not pid_alive(res["pid"])
    finally:
        if pid_alive(res["pid"]):
            os.kill(res["pid"], 9)


def test_a_run_that_cannot_take_the_host_lock_is_refused_clearly(tmp_path):
    state = tmp_path / "state" / "s.json"
    state.parent.mkdir()
    with open(str(state) + ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run, stuck in the middle of its work
        held.write("%d\n" % os.getpid())
        held.flush()
        began = time.monotonic()
        res = start(tmp_path, extra={"lock_timeout": 1})
        took = time.monotonic() - began
    assert res["_rc"] != 0
    assert "another server_process run (pid %d) holds %s.lock" % (os.getpid(), state) in res["msg"], res["msg"]
    assert not (tmp_path / "pids").exists()  # nothing was launched
    assert took < 30
