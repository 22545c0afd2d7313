"""The fake GPU kit, checked through the real nvidia-ml-py, real processes and fuser."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from simlib import fakegpu  # sim/ is on sys.path (tests/conftest.py)

from tests.support import paths

MIB = 1024 * 1024
PY = sys.executable
SIMCTL = paths.SIMCTL

IDLE_RESERVED = 615 * MIB
TOTAL = 97887 * MIB


def simctl(*args, **kw):
    check = kw.pop("check", False)
    return subprocess.run([PY, SIMCTL, "gpu"] + list(args), capture_output=True,
                          text=True, timeout=60, check=check, **kw)


def v2_used_mib(root, gpu):
    return fakegpu.read_status(root)[gpu]["used_mib"]


# ---- a fresh host --------------------------------------------------------------------

def test_cli_init_makes_the_device_files_and_state(tmp_path):
    root = str(tmp_path / "h")
    cp = simctl("init", root, "--gpus", "8")
    assert cp.returncode == 0, cp.stderr
    for name in ["nvidia%d" % i for i in range(8)] + [
            "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"]:
        assert os.path.getsize(os.path.join(root, "dev", name)) == fakegpu.PAGE
    assert not os.path.exists(os.path.join(root, "dev", "nvidia8"))
    assert os.path.isfile(os.path.join(root, "lib", "libnvidia-ml.so.1"))
    conf = fakegpu.read_config(root)
    assert (conf["count"], conf["memory_mib"], conf["reserved_mib"]) == (8, 97887, 615)
    assert conf["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert conf["release_delay_ms"] == 120


def test_idle_gpus_as_nvml_reports_them(root, kit):
    snap = kit.snapshot(root)
    assert snap["driver"] == "580.95.05"
    assert len(snap["gpus"]) == 8
    for i, g in enumerate(snap["gpus"]):
        assert g["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        assert g["nvml_index"] == g["by_uuid"] == i
        # v1 counts the driver's reserve as used; v2 does not (as measured on H200).
        assert g["v1"] == {"total": TOTAL, "used": IDLE_RESERVED, "free": TOTAL - IDLE_RESERVED}
        assert g["v2"] == {"total": TOTAL, "reserved": IDLE_RESERVED, "used": 0,
                           "free": TOTAL - IDLE_RESERVED}
        assert g["procs"] == [] and g["graphics"] == 0
    uuids = [g["uuid"] for g in snap["gpus"]]
    assert len(set(uuids)) == 8 and all(u.startswith("GPU-") for u in uuids)
    assert len({g["bus"] for g in snap["gpus"]}) == 8


def test_uuids_are_stable_across_readers_and_reinit(root, fakenvml_lib, kit):
    first = [g["uuid"] for g in kit.snapshot(root)["gpus"]]
    fakegpu.init(root, gpus=8, lib=fakenvml_lib)
    assert [g["uuid"] for g in kit.snapshot(root)["gpus"]] == first


def test_env_exports(root):
    cp = simctl("env", root, env=dict(os.environ, LD_LIBRARY_PATH="/opt/x"))
    lines = cp.stdout.splitlines()
    assert "export LD_LIBRARY_PATH=%s/lib:/opt/x" % root in lines
    assert "export FAKE_NVML_ROOT=%s" % root in lines
    assert "export GPUFLEET_NVIDIA_DEVICES=%s/dev" % root in lines


def test_nvml_without_a_root_fails_clearly(root, kit):
    env = kit.env(root)
    del env["FAKE_NVML_ROOT"]
    cp = subprocess.run([PY, "-c", "import pynvml; pynvml.nvmlInit()"], env=env,
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode != 0
    assert "FAKE_NVML_ROOT is not set" in cp.stderr
    assert "NVMLError_DriverNotLoaded" in cp.stderr


# ---- holding memory ------------------------------------------------------------------

def test_hold_shows_in_nvml_and_status(root, procs, kit):
    pid = procs.hold(root, [0, 1], 20000)
    snap = kit.snapshot(root)
    for i in (0, 1):
        g = snap["gpus"][i]
        assert g["v2"]["used"] == 20000 * MIB
        assert g["v2"]["free"] == TOTAL - IDLE_RESERVED - 20000 * MIB
        assert g["v1"]["used"] == IDLE_RESERVED + 20000 * MIB
        assert g["procs"] == [[pid, 20000 * MIB]]
    assert snap["gpus"][2]["v2"]["used"] == 0 and snap["gpus"][2]["procs"] == []
    cp = simctl("status", root)
    status = json.loads(cp.stdout)
    assert [s["used_mib"] for s in status[:3]] == [20000, 20000, 0]
    assert status[0]["holders"] == [{"pid": pid, "mib": 20000}]
    assert status[0]["reserved_mib"] == 615 and status[0]["total_mib"] == 97887


def test_holder_is_seen_by_fuser_and_in_maps(root, procs):
    pid = procs.hold(root, [0, 1], 1000)
    dev = os.path.join(root, "dev")
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1"):
        cp = subprocess.run(["fuser", "-v", os.path.join(dev, name)],
                            capture_output=True, text=True, timeout=60, check=False)
        assert str(pid) in cp.stdout.split(), (name, cp.stdout)
    cp = subprocess.run(["fuser", os.path.join(dev, "nvidia2")],
                        capture_output=True, text=True, timeout=60, check=False)
    assert str(pid) not in cp.stdout.split()
    with open("/proc/%d/maps" % pid) as f:
        mapped = {line.split()[-1] for line in f if len(line.split()) >= 6}
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        assert os.path.join(dev, name) in mapped


def test_title_is_the_command_line(root, procs):
    pid = procs.hold(root, [0], 100, "--title", "sglang::scheduler_TP3")
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        cmdline = f.read().replace(b"\0", b" ").strip()
    assert cmdline == b"sglang::scheduler_TP3"


def test_sigkill_releases_after_the_delay(root, procs, kit):
    pid = procs.hold(root, [0], 20000)
    probe = procs.popen([PY, "-c", kit.PROBE, "wait-idle", "0", "10"],
                        env=kit.env(root), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    assert kit.read_line(probe.stdout, 30).strip() == "ready"
    assert v2_used_mib(root, 0) == 20000
    os.kill(pid, signal.SIGKILL)
    probe.stdin.write("go\n")
    probe.stdin.flush()
    result = json.loads(kit.read_line(probe.stdout, 30))
    assert result["elapsed"] is not None, "memory never came back"
    # The release clock starts when a reader first sees the holder gone: >= 0.12 s.
    assert 0.11 <= result["elapsed"] < 1.0, result  # ms clock: up to 1 ms early
    print("release seen after %.3f s (%d polls)" % (result["elapsed"], result["polls"]))
    assert kit.gone(pid)
    assert os.listdir(os.path.join(root, "nvml", "alloc")) == [".lock"]


def test_zombie_counts_as_released(root, procs, kit):
    holder = procs.hold_foreground(root, [0], 20000)
    os.kill(holder.pid, signal.SIGKILL)
    kit.wait_until(lambda: kit.proc_state(holder.pid) == "Z", 10)
    kit.wait_until(lambda: v2_used_mib(root, 0) == 0, 5)
    assert kit.proc_state(holder.pid) == "Z"  # still not reaped: released all the same


def test_holding_lasts_while_the_process_lives(root, procs):
    holder = procs.hold_foreground(root, [3], 500)
    assert v2_used_mib(root, 3) == 500
    # Past the release delay and still held: only the process's end frees it.
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        assert v2_used_mib(root, 3) == 500
        time.sleep(0.02)
    assert holder.poll() is None


def test_ignore_term_survives_sigterm(root, procs, kit):
    pid = procs.hold(root, [0], 100, "--ignore-term")
    with open("/proc/%d/status" % pid) as f:
        sigign = int(next(line for line in f if line.startswith("SigIgn:")).split()[1], 16)
    assert sigign & (1 << (signal.SIGTERM - 1))
    # An ignored signal is discarded when sent, so this is the whole effect of it.
    os.kill(pid, signal.SIGTERM)
    assert kit.proc_state(pid) not in (None, "Z")
    assert fakegpu.read_status(root)[0]["holders"] == [{"pid": pid, "mib": 100}]


def test_exit_delay_keeps_memory_until_exit(root, procs, kit):
    pid = procs.hold(root, [0], 100, "--exit-delay", "0.5")
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    assert v2_used_mib(root, 0) == 100
    took = kit.wait_until(lambda: kit.gone(pid), 10)
    assert took >= 0.45, took
    assert time.monotonic() - t0 < 5
    kit.wait_until(lambda: v2_used_mib(root, 0) == 0, 5)


def test_plain_sigterm_ends_the_holder(root, procs, kit):
    pid = procs.hold(root, [0], 100)
    os.kill(pid, signal.SIGTERM)
    kit.wait_until(lambda: kit.gone(pid), 10)
    kit.wait_until(lambda: v2_used_mib(root, 0) == 0, 5)


# ---- Python API ----------------------------------------------------------------------

def test_python_hold_and_close(root):
    h = fakegpu.hold(root, [2, 5], 1234)
    try:
        status = fakegpu.read_status(root)
        assert [status[i]["used_mib"] for i in (2, 5, 0)] == [1234, 1234, 0]
        assert status[2]["holders"] == [{"pid": os.getpid(), "mib": 1234}]
    finally:
        h.close()
    assert [s["used_mib"] for s in fakegpu.read_status(root)] == [0] * 8  # cudaFree: at once


def test_out_of_memory(root, procs):
    procs.hold(root, [0], 90000)
    free = 97887 - 615 - 90000
    with pytest.raises(fakegpu.OutOfMemory) as exc:
        fakegpu.hold(root, [1, 0], free + 1)
    msg = str(exc.value)
    assert "Tried to allocate %d MiB" % (free + 1) in msg
    assert "GPU 0" in msg and "%d MiB is free" % free in msg
    assert [s["used_mib"] for s in fakegpu.read_status(root)[:2]] == [90000, 0]  # nothing half-held
    cp = simctl("hold", root, "--gpu", "0", "--mib", str(free + 1), "--detach")
    assert cp.returncode == 1 and "out of memory" in cp.stderr
    fakegpu.hold(root, [0], free).close()  # an exact fit is fine


# ---- faults ----------------------------------------------------------------------------

def test_fault_hang_blocks_until_cleared(root, procs, kit):
    cp = simctl("fault", root, "hang")
    assert cp.returncode == 0, cp.stderr
    probe = procs.popen([PY, "-c", kit.PROBE, "snapshot"],
                        env=kit.env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        probe.wait(timeout=1.5)  # the bound a caller must put on NVML
    kit.wait_until(lambda: kit.proc_state(probe.pid) == "S", 5)  # interruptible sleep
    simctl("fault", root, "hang", "--clear")
    out, err = probe.communicate(timeout=30)
    assert probe.returncode == 0, err
    assert len(json.loads(out)["gpus"]) == 8


def test_fault_lost_gpu(root, kit):
    assert simctl("fault", root, "lost", "3").returncode == 0
    gpus = kit.snapshot(root)["gpus"]
    assert gpus[3] == {"index": 3, "error": "NVMLError_GpuIsLost"}
    assert "error" not in gpus[2] and gpus[2]["v2"]["used"] == 0
    simctl("fault", root, "lost", "3", "--clear")
    assert "error" not in kit.snapshot(root)["gpus"][3]


def test_fault_no_v2(root, procs, kit):
    procs.hold(root, [0], 100)
    simctl("fault", root, "no_v2")
    g = kit.snapshot(root)["gpus"][0]
    assert g["v2_error"] == "NVMLError_FunctionNotFound" and "v2" not in g
    assert g["v1"]["used"] == IDLE_RESERVED + 100 * MIB


# ---- readers at once, PID namespaces ---------------------------------------------------------

def test_two_readers_at_once_never_double_count(root, procs, kit):
    pid = procs.hold(root, [0], 20000)
    readers = [kit.popen(root, "sample", "0", "10") for unused in range(2)]
    for r in readers:
        procs.add(r.pid, r)
        assert kit.read_line(r.stdout, 30).strip() == "ready"
    for r in readers:
        r.stdin.write("go\n")
        r.stdin.flush()
    os.kill(pid, signal.SIGKILL)  # released while both read, and age the entry
    for r in readers:
        out, err = r.communicate(timeout=60)
        assert r.returncode == 0, err
        seen = json.loads(out)
        assert set(seen) == {0, 20000 * MIB}, set(seen)  # saw it held, then free; never 2x
        assert seen == sorted(seen, reverse=True)  # once released, it stays released
    assert os.listdir(os.path.join(root, "nvml", "alloc")) == [".lock"]


def _unshare_works():
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                              capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare --pid (root)")
def test_holder_in_a_pid_namespace_is_reported_by_our_pid(root, procs, kit):
    holder = procs.popen(["unshare", "--pid", "--fork", "--mount-proc", PY, SIMCTL, "gpu",
                          "hold", root, "--gpu", "0", "--mib", "100"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert int(kit.read_line(holder.stdout, 60)) == 1  # PID 1 inside its namespace
    with open("/proc/%d/task/%d/children" % (holder.pid, holder.pid)) as f:
        inner = procs.add(int(f.read().split()[0]))
    assert kit.snapshot(root)["gpus"][0]["procs"] == [[inner, 100 * MIB]]


# ---- what a real H200 showed (docs/real-gpu.md, "What the fake kit learned") -------------

NVML_USER = """
import os, sys, pynvml
pynvml.nvmlInit()
print("ready", flush=True)
sys.stdin.readline()
pynvml.nvmlShutdown()
print("closed", flush=True)
sys.stdin.readline()
"""


def _device_files(pid, dev):
    fds = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith(dev + "/"):
            fds.add(os.path.relpath(target, dev))
    with open("/proc/%d/maps" % pid) as f:
        maps = {line.split()[-1] for line in f if dev + "/" in line}
    return fds, maps


def test_nvml_user_has_every_gpu_file_open_but_maps_none(root, procs, kit):
    """Real NVML (nvidia-smi, exporters) opens /dev/nvidiaN, nvidiactl, uvm, caps; maps nothing."""
    p = procs.popen([PY, "-c", NVML_USER], env=kit.env(root), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert kit.read_line(p.stdout, 30).strip() == "ready"
    dev = os.path.join(root, "dev")
    fds, maps = _device_files(p.pid, dev)
    assert fds == {"nvidia%d" % i for i in range(8)} | {
        "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"}
    assert maps == set()
    assert kit.snapshot(root)["gpus"][0]["procs"] == []  # no context, no memory: not listed
    p.stdin.write("\n")
    p.stdin.flush()
    assert kit.read_line(p.stdout, 30).strip() == "closed"
    assert _device_files(p.pid, dev) == (set(), set())


def test_context_costs_memory_when_configured(tmp_path, fakenvml_lib, procs, kit):
    """On an H200 a CUDA context alone is charged ~612 MiB, per process and in v2 used."""
    root = fakegpu.init(str(tmp_path / "h"), gpus=2, lib=fakenvml_lib, context_mib=612)
    ctx = procs.hold(root, [0], 0)
    big = procs.hold(root, [0], 2048)
    g = kit.snapshot(root)["gpus"][0]
    assert sorted(g["procs"]) == sorted([[ctx, 612 * MIB], [big, 2660 * MIB]])
    assert g["v2"]["used"] == (612 + 2660) * MIB
    assert fakegpu.read_config(root)["context_mib"] == 612


def test_no_release_delay_means_free_once_gone(tmp_path, fakenvml_lib, procs, kit):
    """On an H200 memory is already free when the killed process is reaped (0.145 s for 24 GiB)."""
    root = fakegpu.init(str(tmp_path / "h"), gpus=1, lib=fakenvml_lib, release_delay_ms=0)
    holder = procs.hold_foreground(root, [0], 24576)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert v2_used_mib(root, 0) == 0
