"""server_process through `ansible`: own session, state file, stop as a group, port check."""
import os
import socket

from _harness import PYTHON, run_module, wait_for

# A "server" with a child in its process group; it records both PIDs.
SERVER = ("import os, signal, subprocess, sys, time; "
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
          "open(sys.argv[1], 'w').write('%d %d' % (os.getpid(), child.pid)); "
          "time.sleep(600)")


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start(tmp_path, fingerprint="a", extra=None):
    args = {"state": "started", "argv": [PYTHON, "-c", SERVER, str(tmp_path / "pids")],
            "log_path": str(tmp_path / "log" / "server.log"), "state_file": str(tmp_path / "state" / "s.json"),
            "fingerprint": fingerprint}
    args.update(extra or {})
    return run_module("server_process", args)


def test_start_status_stop(tmp_path):
    res = start(tmp_path)
    assert res["_rc"] == 0 and res["changed"] is True, res.get("msg")
    wait_for(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text(), what="server pids")
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
