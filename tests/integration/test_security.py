"""Security: the API key stays secret, servers stay on loopback, files stay private, and the
device sweep can be held to chosen users.

The key and listener tests run real ansible-playbook over real SSH on a simulated fleet (own
sshd port 2720 and SGLang port 31720), taken down in a finalizer. The sweep_users test runs
gpu_release in a private PID namespace (`ns`), so its kills reach nothing outside. The role's
systemd files cannot be written here (no systemd): their modes are read from the role's task
files and their content is rendered the way tests/integration/test_systemd_unit.py does.
"""
import json
import os
import stat
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import yaml
from _fleet_fixtures import Fleet, fleet_proc, needs_fleet
from _fleet_fixtures import ansible_env as fleet_env
from _fleet_fixtures import wait_for as fleet_wait
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_settings
from tests.support.ansible import run_module, run_playbook
from tests.support.paths import PYTHON, REPO, SIM
from tests.support.server_role import mapping, play

ROLE = os.path.join(REPO, "roles", "sglang_server")
SERVER_ROLE = os.path.join(REPO, "roles", "_server")  # the task graph sglang_server hands its variables to
PLAYBOOKS = Path(REPO) / "playbooks"
SECRET = "gf-UNIQUE-SECRET-8d1f3a7c55e2"
SHORT_BENCH = {"swap_bench_levels": [1], "swap_bench_requests_per_level": 2,
               "swap_bench_warmup_requests": 1, "swap_bench_input_len": 32,
               "swap_bench_output_len": 16}

DUMP_PLAYBOOK = """\
- name: Swap as usual
  ansible.builtin.import_playbook: {swap}

- name: Dump the facts and results the plays left behind
  hosts: gpu_hosts
  gather_facts: false
  tasks:
    - name: Dump
      ansible.builtin.debug:
        msg:
          marker: FACT-DUMP
          sglang_server_result: "{{{{ sglang_server_result }}}}"
          sglang_server_teardown: "{{{{ sglang_server_teardown }}}}"
          swap_result: "{{{{ swap_result }}}}"
          swap_bench: "{{{{ swap_bench }}}}"
          ansible_facts: "{{{{ hostvars[inventory_hostname]['ansible_facts'] }}}}"
          # Everything else the host holds (inventory, extra vars, set_fact, register),
          # less the one variable that is the key by design.
          all_but_the_key: >-
            {{{{ hostvars[inventory_hostname] | dict2items
                 | rejectattr('key', 'equalto', 'sglang_server_api_key') | items2dict }}}}
"""


def mode_owner(path):
    st = os.stat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def files_holding(root, text, skip=()):
    """Regular files under ROOT whose bytes contain TEXT (SKIP: paths not to read)."""
    needle, found = text.encode(), []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if path in skip or not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            with open(path, "rb") as handle:
                if needle in handle.read():
                    found.append(path)
    return found


def http_status(url, key=None):
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def listeners(port):
    """Local addresses of the TCP listeners on PORT (this network namespace, IPv4 and IPv6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                address, hexport = fields[1].rsplit(":", 1)
                if fields[3] == "0A" and int(hexport, 16) == port:
                    if len(address) == 8:
                        found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
                    else:
                        found.add("ipv6:" + address)
    return found


def server_processes(fleet, index):
    """{host PID: argv} of the host's SGLang processes (main, schedulers, detokenizer)."""
    state = json.loads((fleet.host_dir(index) / "host.json").read_text())
    out = {}
    for pid in fleet_proc.pids_in_ns(state["pid_ns"]):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                argv = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
        except OSError:
            continue
        if any("sglang" in a for a in argv):
            out[pid] = argv
    return out


# ---- the API key, listeners and file modes on a fleet ----------------------------------

@needs_fleet
def test_api_key_secret_loopback_and_file_modes(request, tmp_path):
    fleet = Fleet(tmp_path / "fleet", 2, 2720, 31720)
    request.addfinalizer(fleet.down)
    fleet.up()
    port = fleet.server_port
    key_var = {"sglang_server_api_key": SECRET}

    def playbook(path, extra):
        cmd = fleet.playbook_cmd("launch.yml", dict(key_var, **extra))
        cmd[cmd.index(str(PLAYBOOKS / "launch.yml"))] = str(path)
        proc = subprocess.run(cmd + ["-vv"], cwd=REPO, env=fleet_env(), capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    outputs = {}
    rc, outputs["launch"] = playbook(PLAYBOOKS / "launch.yml", {})
    assert rc == 0, outputs["launch"][-6000:]
    dump = tmp_path / "swap_and_dump.yml"
    dump.write_text(DUMP_PLAYBOOK.format(swap=PLAYBOOKS / "swap_to_eagle.yml"))
    swap_report = tmp_path / "swap-report"
    rc, outputs["swap"] = playbook(dump, dict(SHORT_BENCH, swap_report_dir=str(swap_report)))
    assert rc == 0, outputs["swap"][-6000:]
    bench_report = tmp_path / "bench-report"
    rc, outputs["benchmark"] = playbook(PLAYBOOKS / "benchmark.yml", {
        "bench_levels": [1], "bench_requests_per_level": 2, "bench_output_len": 16,
        "bench_report_dir": str(bench_report)})
    assert rc == 0, outputs["benchmark"][-6000:]

    # The runs did use the key: the benchmarks were answered (the server refuses without it).
    assert "FACT-DUMP" in outputs["swap"] and '"all_but_the_key"' in outputs["swap"]
    assert '"base_url": "http://127.0.0.2:%d"' % port in outputs["swap"]
    assert "sim-h1: ok, http://127.0.0.2:%d: single-stream" % port in outputs["benchmark"]
    # No Ansible output (-vv), no fact, no register result holds the key.
    for name, text in outputs.items():
        assert SECRET not in text, "the key is in the output of %s" % name

    # No report file holds it.
    for report in (swap_report, bench_report):
        assert {p.name for p in report.iterdir()} >= {"benchmark.json", "benchmark.md", "benchmark.html"}
        assert files_holding(str(report), SECRET) == []

    for index in (1, 2):
        host = fleet.host_dir(index)
        lib = host / "lib" / "gpufleet-serving"
        secret_file = lib / ("sglang-%d.secret.yaml" % port)
        # The key is in exactly one file on the host: the server's 0600 --config file.
        assert yaml.safe_load(secret_file.read_text()) == {"api-key": SECRET}
        assert files_holding(str(host), SECRET) == [str(secret_file)]

        # Modes and owners of what the role wrote (the host's /var/log and /var/lib).
        log_dir = host / "log" / "sglang"
        assert mode_owner(log_dir) == (0o750, 0, 0)
        assert mode_owner(log_dir / ("sglang-%d.log" % port)) == (0o640, 0, 0)
        assert mode_owner(log_dir / ("sglang-%d.log.1" % port)) == (0o640, 0, 0)  # the swap's relaunch
        assert mode_owner(lib) == (0o700, 0, 0)
        assert mode_owner(lib / ("sglang-%d.json" % port)) == (0o600, 0, 0)
        assert mode_owner(secret_file) == (0o600, 0, 0)

        # The key is on no command line; the server was given the file instead.
        procs = server_processes(fleet, index)
        assert len(procs) >= 10, procs  # main process, 8 schedulers, detokenizer
        for pid, argv in procs.items():
            assert SECRET not in " ".join(argv), (pid, argv)
            with open("/proc/%d/environ" % pid, "rb") as handle:
                assert SECRET.encode() not in handle.read(), pid
        # The server, started as `sglang serve` under the log redactor.
        (main,) = [argv for argv in procs.values() if "serve" in argv and "log_redact.py" not in " ".join(argv)]
        assert main[main.index("--config") + 1] == "/var/lib/gpufleet-serving/sglang-%d.secret.yaml" % port
        assert "--api-key" not in main

        # Real SGLang logs the key (server_args=...): the log has the line, with the key masked.
        log_text = (log_dir / ("sglang-%d.log" % port)).read_text()
        assert "server_args=" in log_text and "<redacted>" in log_text
        # Launched through the entry point 0.5.23 recommends: no deprecation warning.
        assert "is still supported, but 'sglang serve' is the recommended entrypoint" not in log_text

        # The server enforces the key.
        base = "http://127.0.0.%d:%d" % (index + 1, port)
        assert http_status(base + "/v1/models") == 401
        assert http_status(base + "/v1/models", "wrong-" + SECRET) == 401
        assert http_status(base + "/v1/models", SECRET) == 200
        assert http_status(base + "/server_info", SECRET) == 200

    # Each server listens on its host's loopback address only (no wildcard, no other address).
    assert listeners(port) == {"127.0.0.2", "127.0.0.3"}

    # A stop takes the key file with the server; a stop with nothing running takes one left behind.
    for run in ("running", "nothing running"):
        rc, out = playbook(PLAYBOOKS / "teardown.yml", {})
        assert rc == 0, out[-6000:]
        assert SECRET not in out
        for index in (1, 2):
            secret_file = fleet.host_dir(index) / "lib" / "gpufleet-serving" / ("sglang-%d.secret.yaml" % port)
            assert not secret_file.exists(), (run, index)
            assert server_processes(fleet, index) == {}, (run, index)
            if run == "running":
                secret_file.write_text(yaml.safe_dump({"api-key": SECRET}))


# ---- what the role would write: defaults and the systemd files -------------------------

RENDER_TASKS = """\
    - name: Compose the launch as the role does
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: plan
        public: true
    - name: Render the unit and the environment file
      ansible.builtin.template:
        src: "{role}/templates/{{{{ item }}}}.j2"
        dest: "{{{{ out_dir }}}}/{{{{ item }}}}"
        mode: "0600"
      loop: [server.service, server.env]
    - name: Write what the role composed
      ansible.builtin.copy:
        content: "{{{{ {{'argv': _server_plan.argv, 'launch': _server_plan.launch_argv, 'url': _server_plan.url,
                       'env': _server_plan.env}} | to_json }}}}"
        dest: "{{{{ out_dir }}}}/composed.json"
        mode: "0600"
"""


def render_role(tmp_path, **role_vars):
    playbook = tmp_path / "render.yml"
    playbook.write_text(play("sglang_server", "Render the role's command, unit and environment file",
                             RENDER_TASKS.format(role=SERVER_ROLE)))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    extra = {"out_dir": str(out_dir), "sglang_server_supervisor": "systemd",
             "sglang_server_model_path": "/models/kimi-k2.5-int4"}
    extra.update(role_vars)
    proc = run_playbook(playbook, extra, flags=["-vv"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    composed = json.loads((out_dir / "composed.json").read_text())
    return composed, (out_dir / "server.service").read_text(), (out_dir / "server.env").read_text(), \
        proc.stdout + proc.stderr


def test_role_defaults_loopback_and_key_only_in_config_file(tmp_path):
    defaults = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))
    assert defaults["sglang_server_host"] == "127.0.0.1"
    assert defaults["sglang_server_api_key"] == ""
    composed, unit, env_file, output = render_role(
        tmp_path, sglang_server_api_key=SECRET, sglang_server_env={"SGLANG_SIM_PROBE": "1"})
    argv = composed["argv"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert composed["url"] == "http://127.0.0.1:30000"
    assert argv[argv.index("--config") + 1] == "/var/lib/gpufleet-serving/sglang-30000.secret.yaml"
    assert "--api-key" not in argv
    for where, text in (("argv", " ".join(argv)), ("unit", unit), ("environment file", env_file),
                        ("ansible output (-vv)", output)):
        assert SECRET not in text, "the key is in the %s" % where
    assert "--host 127.0.0.1 " in unit and "--config /var/lib/gpufleet-serving/sglang-30000.secret.yaml" in unit
    assert "SGLANG_SIM_PROBE=1" in env_file
    # With a key the supervisor starts the log redactor, which runs the server (real SGLang
    # prints the key in its server_args= line) and writes its output with the key masked.
    assert composed["launch"] == ["python3", "/var/lib/gpufleet-serving/log_redact.py",
                                  "/var/lib/gpufleet-serving/sglang-30000.secret.yaml", "--"] + argv
    assert "ExecStart=python3 /var/lib/gpufleet-serving/log_redact.py " in unit
    # Without a key there is no --config at all, and no redactor.
    (tmp_path / "nokey").mkdir()
    composed, _unit, _env, _out = render_role(tmp_path / "nokey")
    assert "--config" not in composed["argv"]
    assert composed["launch"] == composed["argv"]


def _tasks(name):
    with open(os.path.join(SERVER_ROLE, "tasks", name)) as handle:
        return {t["name"]: t for t in yaml.safe_load(handle)}


def test_role_task_files_write_with_tight_modes():
    launch = _tasks("launch_files.yml")
    log_dir = launch["Create the log directory"]["ansible.builtin.file"]
    assert (log_dir["path"], log_dir["state"], log_dir["mode"]) == ("{{ server_spec.log_dir }}", "directory", "0750")
    state_dir = launch["Create the state directory"]["ansible.builtin.file"]
    assert (state_dir["path"], state_dir["state"], state_dir["mode"]) == (
        "{{ server_spec.state_dir }}", "directory", "0700")
    secret = launch["Write the API key where only root can read it"]
    assert secret["ansible.builtin.copy"]["mode"] == "0600" and secret["no_log"] is True
    assert secret["ansible.builtin.copy"]["dest"] == "{{ _server_plan.paths.secret_config }}"

    redactor = launch["Install the log redactor (the server prints the key in its log)"]
    assert redactor["ansible.builtin.copy"]["mode"] == "0700"
    assert redactor["ansible.builtin.copy"]["dest"] == "{{ _server_plan.paths.redactor }}"

    systemd = _tasks("systemd_start.yml")
    log_file = systemd["Create the server log, readable by root and its group only"]["ansible.builtin.file"]
    assert (log_file["path"], log_file["state"], log_file["mode"]) == ("{{ _server_plan.paths.log }}", "touch", "0640")
    env_file = systemd["Write the server's environment (mode 0600)"]["ansible.builtin.template"]
    assert (env_file["src"], env_file["mode"]) == ("server.env.j2", "0600")
    assert env_file["dest"] == "{{ _server_plan.paths.env_file }}"
    unit = systemd["Write the unit"]["ansible.builtin.template"]
    assert (unit["src"], unit["mode"]) == ("server.service.j2", "0600")
    fingerprint = systemd["Record the fingerprint"]["ansible.builtin.copy"]
    assert fingerprint["mode"] == "0600"
    # The stop removes the key file of a stopped server, before the release (a release that fails
    # leaves no key behind): in the stop's own call under the process supervisor (its effect on a
    # fleet: test_api_key_secret_loopback_and_file_modes), in a file task under systemd.
    (process_stop,) = [t["gpufleet.serving.server_process"] for t in _tasks("stop_process.yml").values()
                       if "gpufleet.serving.server_process" in t]
    assert process_stop["remove"] == "{{ [_server_plan.paths.secret_config] if server_spec.state == 'stopped' else [] }}"
    assert "release" in process_stop
    systemd_stop = list(_tasks("systemd_stop.yml").values())
    (removal_at,) = [i for i, t in enumerate(systemd_stop) if "ansible.builtin.file" in t]
    (release_at,) = [i for i, t in enumerate(systemd_stop) if "gpufleet.serving.gpu_release" in t]
    removal = systemd_stop[removal_at]
    assert (removal["ansible.builtin.file"]["path"], removal["ansible.builtin.file"]["state"]) == (
        "{{ _server_plan.paths.secret_config }}", "absent")
    assert removal["when"] == "server_spec.state == 'stopped'" and removal_at < release_at


# ---- sweep_users: another user's GPU holder ----------------------------------------------

NOBODY = 65534
HOLD_AS_NOBODY = """\
import os, signal, sys
sys.path.insert(0, {sim!r})
from simlib import fakegpu
import setproctitle
fakegpu.hold(sys.argv[1], [int(sys.argv[2])], int(sys.argv[3]))
setproctitle.setproctitle("python3 other_users_job.py")
os.setgid({uid})
os.setuid({uid})
print(os.getpid(), flush=True)
signal.pause()
"""


def start_nobody_holder(ns, root, env, gpu, mib):
    code = HOLD_AS_NOBODY.format(sim=SIM, uid=NOBODY)  # a program: its own sys.path
    proc = ns.popen([PYTHON, "-c", code, root, str(gpu), str(mib)], env=env,
                    stdout=subprocess.PIPE, text=True)
    return int(proc.stdout.readline())


def user_of(ns, pid):
    with open("/proc/%d/root/proc/%d/status" % (ns.init_pid, pid)) as handle:
        return [int(line.split()[1]) for line in handle if line.startswith("Uid:")][0]


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def test_sweep_users_spares_other_users_holders(gpu_root, ns):
    root, env = gpu_root
    pid = start_nobody_holder(ns, root, env, 2, 1500)
    assert user_of(ns, pid) == NOBODY
    assert used(root)[2] >= 1500

    limited = run_module("gpu_release", {"patterns": [r"sglang::|sglang\.launch_server"], "gpus": [2],
                                         "sweep_users": ["root"], "timeout": 1.5}, env=env, ns=ns)
    assert limited["_rc"] != 0, limited
    assert limited["killed"] == [] and limited["changed"] is False
    assert limited["msg"].startswith("GPUs not released: GPU 2 ("), limited["msg"]
    assert "still has 1500 MiB used" in limited["msg"]
    assert "holders: pid %d (python3 other_users_job.py, state sleeping)" % pid in limited["msg"]
    (gpu,) = limited["gpus"]
    assert gpu["free"] is False
    assert [(h["pid"], h["user"]) for h in gpu["holders"]] == [(pid, "nobody")]
    assert ns.alive(pid)
    assert used(root)[2] >= 1500

    swept = run_module("gpu_release", {"patterns": [r"sglang::|sglang\.launch_server"], "gpus": [2],
                                       "term_timeout": 2, "timeout": 10}, env=env, ns=ns)
    assert swept["_rc"] == 0, swept.get("msg")
    assert [(k["pid"], k["reason"]) for k in swept["killed"]] == [(pid, "device")]
    assert fleet_wait(lambda: not ns.alive(pid), timeout=10)
    assert used(root)[2] == 0


def test_both_roles_hand_their_sweep_users_to_the_release():
    # The module spares other users' holders (test above) only if the roles pass the list on:
    # on a shared host a launch must not kill another user's job holding one of its GPUs.
    # Both supervisors: the process stop's own release, the systemd stop's gpu_release.
    release = [t["gpufleet.serving.server_process"]["release"] for t in _tasks("stop_process.yml").values()
               if "gpufleet.serving.server_process" in t]
    release += [t["gpufleet.serving.gpu_release"] for t in _tasks("systemd_stop.yml").values()
                if "gpufleet.serving.gpu_release" in t]
    assert [r["sweep_users"] for r in release] == ["{{ server_spec.release_sweep_users }}"] * 2
    for engine in ("sglang", "vllm"):
        role = os.path.join(REPO, "roles", "%s_server" % engine)
        # The role hands _server its settings through the server_spec lookup, which reads the variable.
        assert mapping("%s_server" % engine)["server_spec"] == "{{ lookup('gpufleet.serving.server_spec', '%s') }}" % engine
        assert server_settings.resolve(engine, {"release_sweep_users": ["svc"]})["release_sweep_users"] == ["svc"]
        with open(os.path.join(role, "defaults", "main.yml")) as handle:
            assert yaml.safe_load(handle)["%s_server_release_sweep_users" % engine] == []
