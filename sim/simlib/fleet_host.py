"""One simulated host: its files under DIR/hosts/hN and the namespace it runs in.

A host is `unshare --pid --mount --fork --mount-proc` whose forked child (the
namespace's PID 1) runs init.sh: bind-mount the host's private /run, /var/log,
/var/lib and /tmp, then exec tini, which runs sshd. Killing that PID 1 ends
every process of the host.
"""
import json
import os
import shlex
import socket
import subprocess
import sys

from simlib import fleet_proc, layout

SIM_DIR = layout.SIM_DIR
SIMCTL = layout.SIMCTL
SSHD = "/usr/sbin/sshd"

# Host-private directories: (name under DIR/hosts/hN, mount point, mode).
PRIVATE_DIRS = (("run", "/run", 0o755), ("log", "/var/log", 0o755),
                ("lib", "/var/lib", 0o755), ("tmp", "/tmp", 0o1777))


def address(index):
    """Host 1 is 127.0.0.2: 127.0.0.1 stays the real host's."""
    return "127.0.0.%d" % (index + 1)


class Host:
    def __init__(self, fleet_dir, index, port):
        self.fleet_dir = fleet_dir
        self.index = index
        self.port = port
        self.name = "sim-h%d" % index
        self.address = address(index)
        self.dir = os.path.join(fleet_dir, "hosts", "h%d" % index)
        self.gpu_root = os.path.join(self.dir, "gpu")
        self.host_key = os.path.join(self.dir, "ssh_host_ed25519_key")
        self.sshd_config = os.path.join(self.dir, "sshd_config")
        self.init_script = os.path.join(self.dir, "init.sh")
        self.state_file = os.path.join(self.dir, "host.json")
        self.init_pid_file = os.path.join(self.dir, "init.pid")
        self.console = os.path.join(self.dir, "console.log")
        self.session_env_file = os.path.join(self.dir, "session.env")

    # ---- files -------------------------------------------------------------

    def prepare(self, gpus, extra_env, authorized_keys, gpu_model=None):
        """Create the host's directories, keys, fake GPUs and configs.

        GPU_MODEL: {"name": ..., "memory_mib": ...} for `simctl gpu init` (default: its own)."""
        os.makedirs(self.dir, mode=0o755)
        for name, unused, mode in PRIVATE_DIRS:
            path = os.path.join(self.dir, name)
            os.mkdir(path)
            os.chmod(path, mode)  # mkdir's mode is cut by the umask
        # sshd refuses to start without its privilege-separation directory.
        os.mkdir(os.path.join(self.dir, "run", "sshd"), 0o755)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.name,
                        "-f", self.host_key], check=True, stdin=subprocess.DEVNULL)
        env = self._gpu_env(gpus, gpu_model or {})
        env.update(extra_env)
        with open(self.session_env_file, "w") as f:
            for key, value in env.items():
                f.write("%s=%s\n" % (key, value))
        with open(self.sshd_config, "w") as f:
            f.write(self._render_sshd_config(env, authorized_keys))
        with open(self.init_script, "w") as f:
            f.write(self._render_init())

    def _gpu_env(self, gpus, gpu_model):
        """Make the fake GPU root and return what `simctl gpu env` exports for it."""
        if not os.path.exists(os.path.join(SIM_DIR, "simlib", "gpu_cli.py")):
            # The fake GPU kit is not there yet: keep going with the documented layout.
            os.makedirs(self.gpu_root, exist_ok=True)
            return {"LD_LIBRARY_PATH": os.path.join(self.gpu_root, "lib"),
                    "FAKE_NVML_ROOT": self.gpu_root}
        model = []
        if gpu_model.get("name"):
            model += ["--name", gpu_model["name"]]
        if gpu_model.get("memory_mib"):
            model += ["--memory-mib", str(gpu_model["memory_mib"])]
        subprocess.run([sys.executable, SIMCTL, "gpu", "init", self.gpu_root,
                        "--gpus", str(gpus), *model], check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL)
        out = subprocess.run([sys.executable, SIMCTL, "gpu", "env", self.gpu_root],
                             check=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, text=True).stdout
        return parse_exports(out)

    def _render_sshd_config(self, env, authorized_keys):
        lines = [
            "# Written by `simctl fleet up` for %s; removed by `simctl fleet down`." % self.name,
            "ListenAddress %s:%d" % (self.address, self.port),
            "HostKey %s" % self.host_key,
            "PidFile %s" % os.path.join(self.dir, "sshd.pid"),
            "AuthorizedKeysFile %s" % authorized_keys,
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            # The key path may run through /tmp (world-writable): the mode check would
            # refuse it, and every file involved is root's own.
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            # A load test opens many sessions at once.
            "MaxStartups 200",
            "MaxSessions 100",
            "Subsystem sftp /usr/lib/openssh/sftp-server",
        ]
        if env:
            # Only the first SetEnv line counts, so all pairs go on one; sshd splits
            # the arguments like a shell word list, hence the quotes.
            lines.append("SetEnv " + " ".join('"%s=%s"' % kv for kv in env.items()))
        return "\n".join(lines) + "\n"

    def _render_init(self):
        """The namespace's PID 1 before it becomes tini: mount, then exec."""
        q = shlex.quote
        # The real SGLang a kit links to (sim_fleet_sglang_real_root) may live outside the
        # kit, e.g. in a checkout under /tmp: keep it visible too, or the simulator's parser
        # finds a dangling link inside the host.
        keep_visible = {os.path.realpath(self.fleet_dir), layout.ROOT, _python_home()}
        if os.path.exists(layout.SGLANG_REAL):
            keep_visible.add(os.path.realpath(layout.SGLANG_REAL))
        keep_visible = sorted(keep_visible)
        early, late = [], []
        for name, target, unused in PRIVATE_DIRS:
            source = os.path.join(self.dir, name)
            hidden = [p for p in keep_visible if p == target or p.startswith(target + "/")]
            if not hidden:
                early.append("mount --bind %s %s" % (q(source), q(target)))
                continue
            # The fleet dir or the repo lives under TARGET: bind it into the private
            # copy at the same path first, so it stays visible once TARGET is covered.
            for path in hidden:
                inner = os.path.join(source, os.path.relpath(path, target))
                os.makedirs(inner, exist_ok=True)
                late.append("mount --bind %s %s" % (q(path), q(inner)))
            late.append("mount --rbind %s %s" % (q(source), q(target)))
        return "\n".join([
            "#!/bin/sh",
            "# PID 1 of %s (written by simctl fleet up)." % self.name,
            "set -e",
            *early, *late,
            "exec tini -- %s -D -e -f %s" % (SSHD, q(self.sshd_config)),
        ]) + "\n"

    # ---- the running host --------------------------------------------------

    def launch(self):
        """Start the namespace; return the unshare Popen (its child is PID 1)."""
        log = open(self.console, "ab")
        try:
            return subprocess.Popen(
                ["unshare", "--pid", "--mount", "--fork", "--mount-proc",
                 "--propagation", "private", "--kill-child",
                 "/bin/sh", self.init_script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, close_fds=True)
        finally:
            log.close()

    def record(self, unshare_pid, init_pid):
        state = {
            "name": self.name, "address": self.address, "port": self.port,
            "unshare_pid": unshare_pid, "unshare_start": fleet_proc.start_time(unshare_pid),
            "init_pid": init_pid, "init_start": fleet_proc.start_time(init_pid),
            "pid_ns": fleet_proc.pid_ns(init_pid),
        }
        write_json(self.state_file, state)
        with open(self.init_pid_file, "w") as f:
            f.write("%d\n" % init_pid)
        return state

    def load_state(self):
        try:
            with open(self.state_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def sshd_answers(self, timeout=0.5):
        """True once sshd sends its banner (listening alone is not enough)."""
        try:
            with socket.create_connection((self.address, self.port), timeout=timeout) as s:
                return s.recv(8).startswith(b"SSH-")
        except OSError:
            return False

    def console_tail(self, lines=15):
        try:
            with open(self.console, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


def _python_home():
    """The hosts' interpreter's venv (or prefix): it must stay visible in the namespace."""
    return os.path.dirname(os.path.dirname(os.path.abspath(layout.python())))


def parse_exports(text):
    """KEY=VALUE pairs from `export KEY=VALUE` lines (values may be shell-quoted)."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):]
        key, sep, value = line.partition("=")
        if sep:
            words = shlex.split(value)
            env[key.strip()] = words[0] if words else ""
    return env


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
