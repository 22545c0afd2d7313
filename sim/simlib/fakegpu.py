"""The fake GPU kit: a host root whose GPUs the real nvidia-ml-py can see.

Layout of a root made by init(ROOT) (the fake NVML in fakenvml/fakenvml.c reads it):

  ROOT/dev/nvidia0..N-1, nvidiactl, nvidia-uvm, nvidia-caps/nvidia-cap1,2
        regular files of one page: holders open and mmap them, so `fuser` and
        /proc/PID/maps show holders exactly as on a real host
  ROOT/lib/libnvidia-ml.so.1   the fake NVML
  ROOT/nvml/config             key=value: count, name, memory_mib, reserved_mib,
                               driver_version, release_delay_ms, context_mib, uuid<N>
                               (context_mib: what each holder's CUDA context costs on
                               each of its GPUs on top of its allocation; 0 by default,
                               ~612 MiB on a real H200 with driver 580)
  ROOT/nvml/alloc/.lock        readers and registering holders flock it (LOCK_EX)
  ROOT/nvml/alloc/a-G-P-T      one allocation on GPU G by pid P (as P's own PID
                               namespace sees it): lines gpu, pid, starttime, mib.
                               Its holder keeps LOCK_EX on it while the process
                               lives; the kernel drops the lock at exit (a zombie
                               has no files), which is what "released" means.
  ROOT/nvml/alloc/r-G-P-T-MS   a released allocation, first seen released at
                               CLOCK_MONOTONIC MS; counted as used until
                               release_delay_ms (default 120) has passed, then
                               removed by a reader. On a real H200 the 0.12-0.4 s
                               go by inside the process's exit and memory is free
                               once it is gone: release_delay_ms=0 is that (the
                               default keeps the stricter, later release). The
                               clock starts at the first read after the exit, so a
                               caller that polls sees what a real driver shows; one
                               single read long after the exit still sees it held.
  ROOT/nvml/faults/            fault switches (set_fault / `simctl gpu fault`):
      hang      while it exists, every NVML call sleeps (interruptibly) until it is gone
      hang<N>   the same for the calls on GPU N only (`simctl gpu fault ROOT hang N`)
      lost<N>   calls on GPU N (handle lookups included) return NVML_ERROR_GPU_IS_LOST
      no_v2     nvmlDeviceGetMemoryInfo_v2 returns NVML_ERROR_FUNCTION_NOT_FOUND
      no_energy nvmlDeviceGetTotalEnergyConsumption returns NVML_ERROR_NOT_SUPPORTED
  ROOT/nvml/health/gpu<N>      what GPU N reports to gpu_health's NVML calls, key=value,
                               read at every call (set_health / `simctl gpu health`); an
                               absent key keeps its healthy default (HEALTH_DEFAULTS):
      persistence, ecc_current, ecc_pending     1 = enabled
      ecc_dbe_volatile                          uncorrectable ECC errors since load
      retired_sbe, retired_dbe, retired_pending page retirement; while none of the
                                                three is set the calls answer
                                                NOT_SUPPORTED, as on Ampere and later
      remap_corr, remap_unc, remap_pending, remap_failure   nvmlDeviceGetRemappedRows
      recovery_action                           field 230 (0 none, 1 GPU reset, ...)
      inforom                                   valid, corrupt or not_supported
      fabric_state, fabric_status               -1: NOT_SUPPORTED (a PCIe board); else
                                                nvmlGpuFabricState_t (3 = completed)
                                                and the training's NVML return code
      pcie_width(_max), pcie_gen(_max)          the link now and at most
      clocks_event_reasons                      bit mask (0x40 HW thermal slowdown ...); when the
                                                file does not name it, 0x1 (idle) while idle and
                                                none while busy (the power model below)
      temperature, temperature_slowdown, temperature_shutdown   degrees C (temperature, when
                                                not named: 35 + 45 x the load)
      arch                                      nvmlDeviceGetArchitecture (7 Ampere, 9 Hopper,
                                                10 Blackwell, the default)
      nvswitch, nvlink_peers                    NVLink (set_nvlink): nvswitch=1, 18 links to
                                                NVSwitches; else a bit mask of the GPUs a bridge
                                                links this one to; neither: a PCIe board
      stuck_mib                                 memory held with no process (stick): used, listed
                                                for nobody, until sim/bin/nvidia-smi -r resets it
    HEALTH_FAULTS names the faults the tests inject (inject_health / `simctl gpu health`).
  ROOT/nvml/power/gpu<N>       the GPU's load, power and energy counter: one line
                               "t_ms e_uj p_mw prev_p_mw load_milli vpow_ns vtherm_ns
                               pow_active therm_active" (set_load; set_health rebases it,
                               since a slowdown changes what a load draws); the model is
                               POWER_MODEL below and sim/README.md's "Power and energy"
  ROOT/nvml/power/gpu<N>.log   one line "t_ms e_uj p_mw" per change: the counter's own
                               integral (energy_between) that tests check telemetry with
  ROOT/kernel.log              the host's kernel log: add_xid appends "NVRM: Xid" lines for a
                               GPU's PCI address (pci_bus_id); gpu_health reads it with
                               kernel_log=ROOT/kernel.log

Use from Python (sim/ on sys.path):

    from simlib import fakegpu
    fakegpu.init(root, gpus=8)
    h = fakegpu.hold(root, [0, 1], 20000)   # raises fakegpu.OutOfMemory if it does not fit
    ...                                     # lives as long as the process, or until h.close()
"""
import fcntl
import mmap
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import uuid

from simlib import fleet_proc, layout

DEFAULT_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
DEFAULT_MEMORY_MIB = 97887
# GPU models a fleet can have (`simctl fleet up --gpu-model`): the name and total memory
# NVML reports. rtx_pro_6000 is the default above; h200 as measured (docs/real-gpu.md);
# h100 (80GB HBM3 SXM) and b200 as published nvidia-smi tables show them (no board here):
# "NVIDIA H100 80GB HBM3 ... 81559MiB" (NVIDIA/nccl issue 1264, driver 550.54.15),
# "NVIDIA B200 ... 183359MiB" (NVIDIA/TensorRT-LLM issue 10278, driver 580.95.05).
GPU_MODELS = {
    "rtx_pro_6000": {"name": DEFAULT_NAME, "memory_mib": DEFAULT_MEMORY_MIB},
    "h100": {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559},
    "h200": {"name": "NVIDIA H200", "memory_mib": 143771},
    "b200": {"name": "NVIDIA B200", "memory_mib": 183359},
}
DEFAULT_RESERVED_MIB = 615
DEFAULT_DRIVER = "580.95.05"
DEFAULT_RELEASE_DELAY_MS = 120
LIB_NAME = "libnvidia-ml.so.1"
FAULTS = ("hang", "lost", "no_v2", "no_energy")
# The power model's defaults (nvml/config keys of the same names; fakenvml.c reads them too).
# An H100/H200 SXM board: 700 W limit, SM clocks as `nvidia-smi -q -d CLOCK` prints them
# as an H200 read them (docs/real-gpu.md, 2026-12-05): max and default applications clock 1980 MHz,
# idle SM 885 MHz, memory 3201 MHz; idle 70 W.
POWER_MODEL = {
    "energy_period_ms": 100,  # the counter's update period, as measured on an H200 (docs/real-gpu.md)
    "power_idle_w": 70,       # drawn with no load
    "power_max_w": 700,       # drawn at full load (and the enforced power limit)
    "sm_clock_max_mhz": 1980, "sm_clock_default_mhz": 1980, "sm_clock_idle_mhz": 885,
    "mem_clock_mhz": 3201,
}
# Busy at any load draws at least this share of the span between idle and full power.
BUSY_FLOOR = 0.3
# Reasons that hold the SM clock down (HW slowdown, SW/HW thermal, HW power brake): while one
# is set, a busy GPU runs at half its default clock and its dynamic power halves too.
SLOWDOWN_REASONS = 0x8 | 0x20 | 0x40 | 0x80
POWER_REASONS = 0x4 | 0x80     # counted in nvmlDeviceGetViolationStatus(POWER)
THERMAL_REASONS = 0x20 | 0x40  # counted in nvmlDeviceGetViolationStatus(THERMAL)
# The healthy GPU fakenvml.c reports when ROOT/nvml/health/gpu<N> does not say otherwise.
HEALTH_DEFAULTS = {
    "persistence": 1, "ecc_current": 1, "ecc_pending": 1, "ecc_dbe_volatile": 0,
    "remap_corr": 0, "remap_unc": 0, "remap_pending": 0, "remap_failure": 0, "recovery_action": 0,
    "inforom": "valid", "fabric_state": -1, "fabric_status": 0,
    "pcie_width": 16, "pcie_width_max": 16, "pcie_gen": 5, "pcie_gen_max": 5,
    "clocks_event_reasons": 0x1, "temperature": 35, "temperature_slowdown": 87, "temperature_shutdown": 92,
}
# Not health readings, but per GPU and read at every call like them (fakenvml.c read_health).
HEALTH_DEFAULTS.update({"arch": 10, "nvswitch": 0, "nvlink_peers": 0, "stuck_mib": 0})
HEALTH_KEYS = tuple(HEALTH_DEFAULTS) + ("retired_sbe", "retired_dbe", "retired_pending")
ARCH = {"ampere": 7, "hopper": 9, "blackwell": 10}  # nvmlDeviceArchitecture_t
# Named faults: what a sick GPU of that kind reports.
HEALTH_FAULTS = {
    "ecc_dbe": {"ecc_dbe_volatile": 2},
    "retired_pending": {"retired_sbe": 0, "retired_dbe": 1, "retired_pending": 1},
    "retired_limit": {"retired_sbe": 40, "retired_dbe": 23, "retired_pending": 0},
    "remap_pending": {"remap_corr": 1, "remap_pending": 1},
    "remap_failure": {"remap_failure": 1},
    "remap_uncorrectable": {"remap_unc": 512},
    "recovery_action": {"recovery_action": 1},
    "persistence_off": {"persistence": 0},
    "ecc_off": {"ecc_current": 0, "ecc_pending": 0},
    "inforom_corrupt": {"inforom": "corrupt"},
    "fabric_not_started": {"fabric_state": 1},
    "pcie_downgraded": {"pcie_width": 8},
    "thermal": {"clocks_event_reasons": 0x40, "temperature": 88},
    "power_brake": {"clocks_event_reasons": 0x80},
}
KERNEL_LOG = "kernel.log"

_HERE = os.path.dirname(os.path.abspath(__file__))
C_SOURCE = os.path.join(os.path.dirname(_HERE), "fakenvml", "fakenvml.c")
PREBUILT = layout.FAKENVML_LIB  # build/fakenvml of the checkout or of the built kit
PAGE = mmap.PAGESIZE
_LIVE = []  # holdings last as long as the process unless closed: keep them from GC


class OutOfMemory(RuntimeError):
    """Like CUDA's 'CUDA out of memory. Tried to allocate ...'."""


# ---- building and making a root ------------------------------------------------

def build(outdir):
    """Compile the fake NVML into OUTDIR/libnvidia-ml.so.1; returns its path."""
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, LIB_NAME)
    tmp = out + ".tmp%d" % os.getpid()
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall",
                    "-Wl,-soname," + LIB_NAME, "-o", tmp, C_SOURCE], check=True)
    os.replace(tmp, out)  # a process that has the old one mapped keeps it intact
    return out


def _install_lib(root, lib=None):
    """Copy LIB, else build/fakenvml's library if it is up to date, else compile."""
    dest = os.path.join(root, "lib", LIB_NAME)
    if lib is None and os.path.exists(PREBUILT) \
            and os.path.getmtime(PREBUILT) >= os.path.getmtime(C_SOURCE):
        lib = PREBUILT
    if lib is None:
        build(os.path.join(root, "lib"))
        return
    tmp = dest + ".tmp%d" % os.getpid()
    shutil.copyfile(lib, tmp)
    os.replace(tmp, dest)  # processes that have the old one mapped keep it intact


def _touch_device(path):
    if not os.path.exists(path) or os.path.getsize(path) < PAGE:
        with open(path, "ab") as f:
            f.truncate(PAGE)
    os.chmod(path, 0o666)  # as /dev/nvidia* on a real host


def init(root, gpus=8, name=DEFAULT_NAME, memory_mib=DEFAULT_MEMORY_MIB,
         reserved_mib=DEFAULT_RESERVED_MIB, driver_version=DEFAULT_DRIVER,
         release_delay_ms=DEFAULT_RELEASE_DELAY_MS, lib=None, context_mib=0, **power_model):
    """Make (or refresh) a fake GPU host root. Keeps UUIDs, live allocations and energy counters.

    LIB: a built libnvidia-ml.so.1 to copy (tests build it once per session).
    power_model: keys of POWER_MODEL to change (energy_period_ms=50, power_max_w=1000, ...)."""
    unknown = sorted(set(power_model) - set(POWER_MODEL))
    if unknown:
        raise ValueError("unknown power model key %s (known: %s)" % (", ".join(unknown), ", ".join(POWER_MODEL)))
    root = os.path.abspath(root)
    dev = os.path.join(root, "dev")
    for d in (dev, os.path.join(dev, "nvidia-caps"), os.path.join(root, "lib"),
              os.path.join(root, "nvml", "faults")):
        os.makedirs(d, exist_ok=True)
    alloc = os.path.join(root, "nvml", "alloc")
    os.makedirs(alloc, exist_ok=True)
    os.chmod(alloc, 0o777)  # any user's CUDA process may register memory
    for i in range(gpus):
        _touch_device(os.path.join(dev, "nvidia%d" % i))
    for extra in ("nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"):
        _touch_device(os.path.join(dev, extra))
    for entry in os.listdir(dev):  # a smaller re-init drops the extra GPUs
        if entry.startswith("nvidia") and entry[6:].isdigit() and int(entry[6:]) >= gpus:
            os.unlink(os.path.join(dev, entry))

    old = read_config(root) if os.path.exists(_config_path(root)) else {}
    conf = {"count": gpus, "name": name, "memory_mib": memory_mib,
            "reserved_mib": reserved_mib, "driver_version": driver_version,
            "release_delay_ms": release_delay_ms, "context_mib": int(context_mib)}
    for key, default in POWER_MODEL.items():
        conf[key] = int(power_model.get(key, old.get(key, default)))
    for i in range(gpus):
        conf["uuid%d" % i] = old.get("uuid%d" % i) or "GPU-%s" % uuid.uuid4()
    _write_atomic(_config_path(root), "".join("%s=%s\n" % kv for kv in conf.items()))
    if not os.path.exists(kernel_log(root)):
        with open(kernel_log(root), "w") as f:
            f.write("[    0.000000] Linux version 6.8.0 (simulated host)\n"
                    "[    5.100000] nvidia: module loaded (fake NVML %s)\n" % driver_version)
    os.makedirs(os.path.join(root, "nvml", "power"), exist_ok=True)
    for i in range(gpus):
        if not os.path.exists(power_path(root, i)):
            set_load(root, [i], 0)
    _install_lib(root, lib)
    return root


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _config_path(root):
    return os.path.join(root, "nvml", "config")


def read_config(root):
    conf = {}
    with open(_config_path(root)) as f:
        for line in f:
            key, sep, value = line.rstrip("\n").partition("=")
            if sep:
                conf[key] = int(value) if value.isdigit() else value
    return conf


def env(root, base=None):
    """The environment a process needs (at start) to see this root's GPUs."""
    root = os.path.abspath(root)
    base = os.environ if base is None else base
    lib = os.path.join(root, "lib")
    old = base.get("LD_LIBRARY_PATH", "")
    return {"LD_LIBRARY_PATH": lib + (":" + old if old else ""),
            "FAKE_NVML_ROOT": root,
            "GPUFLEET_NVIDIA_DEVICES": os.path.join(root, "dev")}


# ---- faults -------------------------------------------------------------------

def fault_path(root, kind, gpu=None):
    if kind not in FAULTS:
        raise ValueError("unknown fault %r (one of %s)" % (kind, ", ".join(FAULTS)))
    if kind == "lost":
        if gpu is None:
            raise ValueError("fault 'lost' needs a GPU index")
        kind = "lost%d" % int(gpu)
    elif kind == "hang" and gpu is not None:
        kind = "hang%d" % int(gpu)
    return os.path.join(os.path.abspath(root), "nvml", "faults", kind)


def set_fault(root, kind, gpu=None, clear=False):
    path = fault_path(root, kind, gpu)
    if clear:
        if os.path.exists(path):
            os.unlink(path)
    else:
        open(path, "a").close()
    return path


# ---- health (must agree with read_health() in fakenvml.c) ------------------------

def health_path(root, gpu):
    return os.path.join(os.path.abspath(root), "nvml", "health", "gpu%d" % int(gpu))


def read_health(root, gpu):
    """What GPU `gpu` reports: HEALTH_DEFAULTS updated by its health file."""
    values = dict(HEALTH_DEFAULTS)
    try:
        with open(health_path(root, gpu)) as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep:
                    values[key] = int(value, 0) if value.lstrip("-").isdigit() or value.startswith("0x") else value
    except FileNotFoundError:
        pass
    return values


def set_health(root, gpu, clear=False, **values):
    """Change what GPU `gpu` reports (keys of HEALTH_KEYS); clear=True: healthy again."""
    path = health_path(root, gpu)
    if clear:
        if os.path.exists(path):
            with _PowerLock(root):
                os.unlink(path)
                _rebase(root, gpu, None)
        return path
    unknown = sorted(set(values) - set(HEALTH_KEYS))
    if unknown:
        raise ValueError("unknown health key %s (known: %s)" % (", ".join(unknown), ", ".join(HEALTH_KEYS)))
    current = {}
    if os.path.exists(path):
        with open(path) as f:
            current = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    current.update({k: str(v) for k, v in values.items()})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with _PowerLock(root):  # what a load draws changes with the health: rebase the counter
        _write_atomic(path, "".join("%s=%s\n" % kv for kv in sorted(current.items())))
        _rebase(root, gpu, None)
    return path


def inject_health(root, gpu, fault):
    """Give GPU `gpu` the named fault of HEALTH_FAULTS."""
    if fault not in HEALTH_FAULTS:
        raise ValueError("unknown health fault %r (one of %s)" % (fault, ", ".join(sorted(HEALTH_FAULTS))))
    return set_health(root, gpu, **HEALTH_FAULTS[fault])


def set_nvlink(root, gpus, arch="blackwell", nvswitch=False, pairs=()):
    """GPUs `gpus` of ARCH (a key of ARCH), on an NVSwitch fabric, or linked by bridges in PAIRS."""
    peers = {g: 0 for g in gpus}
    for a, b in pairs:
        peers[a] |= 1 << b
        peers[b] |= 1 << a
    # A Hopper or later GPU on NVSwitch reports its fabric's state (trained: 3, completed); others have none.
    fabric = 3 if nvswitch and ARCH[arch] >= ARCH["hopper"] else -1
    for gpu in gpus:
        set_health(root, gpu, arch=ARCH[arch], nvswitch=int(bool(nvswitch)), nvlink_peers=peers[gpu], fabric_state=fabric)


def stick(root, gpu, mib):
    """GPU `gpu` holds MIB MiB that no process owns (what a crashed server may leave behind)."""
    return set_health(root, gpu, stuck_mib=int(mib))


def reset(root, gpus):
    """What `nvidia-smi -r -i GPUS` does to the fake GPUs: their stuck memory is gone."""
    for gpu in gpus:
        if read_health(root, gpu)["stuck_mib"]:
            set_health(root, gpu, stuck_mib=0)


# ---- power and energy (must agree with the "power" section of fakenvml.c) -------------

def power_path(root, gpu):
    return os.path.join(os.path.abspath(root), "nvml", "power", "gpu%d" % int(gpu))


class _PowerLock:
    """nvml/power/.lock: one writer of the power files at a time (the server's load, set_health)."""

    def __init__(self, root):
        self.path = os.path.join(os.path.abspath(root), "nvml", "power", ".lock")

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


POWER_FIELDS = ("t_ms", "e_uj", "p_mw", "prev_p_mw", "load_milli", "vpow_ns", "vtherm_ns",
                "pow_active", "therm_active")


def read_power(root, gpu):
    """GPU `gpu`'s power file as a dict of POWER_FIELDS, or None without one."""
    try:
        with open(power_path(root, gpu)) as f:
            values = [int(x) for x in f.read().split()]
    except (FileNotFoundError, ValueError):
        return None
    return dict(zip(POWER_FIELDS, values)) if len(values) == len(POWER_FIELDS) else None


def power_mw(conf, load, reasons):
    """What a GPU draws (mW) at LOAD (0..1) with these clocks-event reasons: the model."""
    idle, full = conf.get("power_idle_w", POWER_MODEL["power_idle_w"]), conf.get("power_max_w", POWER_MODEL["power_max_w"])
    if load <= 0:
        return int(idle * 1000)
    dynamic = (full - idle) * (BUSY_FLOOR + (1.0 - BUSY_FLOOR) * min(float(load), 1.0))
    if reasons & SLOWDOWN_REASONS:
        dynamic *= 0.5  # the SM clock runs at half its default (fakenvml.c clock_now)
    return int(round((idle + dynamic) * 1000))


def _rebase(root, gpu, load):
    """Close the power file's segment now and start one at LOAD (None: the same load). Lock held."""
    conf = read_config(root) if os.path.exists(_config_path(root)) else {}
    now = time.monotonic_ns() // 1_000_000  # CLOCK_MONOTONIC ms, as the C side
    old = read_power(root, gpu)
    reasons = int(read_health(root, gpu)["clocks_event_reasons"])
    if old is None:
        old = dict.fromkeys(POWER_FIELDS, 0)
        old["t_ms"] = now
        old["p_mw"] = old["prev_p_mw"] = power_mw(conf, 0, reasons)
    span = max(now - old["t_ms"], 0)
    load_milli = old["load_milli"] if load is None else int(round(min(max(load, 0.0), 1.0) * 1000))
    new = {
        "t_ms": now,
        "e_uj": old["e_uj"] + old["p_mw"] * span,  # mW x ms = uJ
        "p_mw": power_mw(conf, load_milli / 1000.0, reasons),
        "prev_p_mw": old["p_mw"],
        "load_milli": load_milli,
        "vpow_ns": old["vpow_ns"] + (span * 1_000_000 if old["pow_active"] else 0),
        "vtherm_ns": old["vtherm_ns"] + (span * 1_000_000 if old["therm_active"] else 0),
        "pow_active": 1 if reasons & POWER_REASONS else 0,
        "therm_active": 1 if reasons & THERMAL_REASONS else 0,
    }
    _write_atomic(power_path(root, gpu), " ".join(str(new[k]) for k in POWER_FIELDS) + "\n")
    log = power_path(root, gpu) + ".log"
    if os.path.exists(log) and os.path.getsize(log) > LOG_ROTATE_BYTES:
        os.replace(log, log + ".old")  # a long demo keeps the last few MB
    with open(log, "a") as f:
        f.write("%d %d %d\n" % (new["t_ms"], new["e_uj"], new["p_mw"]))
    return new


LOG_ROTATE_BYTES = 4 << 20


def set_load(root, gpus, load):
    """GPUs `gpus` run at LOAD (0: idle, 1: a full batch) from now: what a server tells its GPUs."""
    root = os.path.abspath(root)
    with _PowerLock(root):
        return [_rebase(root, g, load) for g in gpus]


def energy_between(root, gpu, t0, t1):
    """Joules GPU `gpu` drew between CLOCK_MONOTONIC seconds t0 and t1, integrated exactly
    from its power log (the counter's own integral, not quantised to its update period)."""
    segments = []
    with open(power_path(root, gpu) + ".log") as f:
        for line in f:
            t_ms, unused, p_mw = (int(x) for x in line.split())
            segments.append((t_ms / 1000.0, p_mw / 1000.0))
    joules = 0.0
    for i, (start, watts) in enumerate(segments):
        end = segments[i + 1][0] if i + 1 < len(segments) else float("inf")
        lo, hi = max(start, t0), min(end, t1)
        if hi > lo:
            joules += watts * (hi - lo)
    return joules


def pci_bus_id(gpu):
    """GPU `gpu`'s PCI bus id as the fake NVML reports it (nvmlDeviceGetPciInfo_v3)."""
    return "00000000:%02X:00.0" % (0x18 + 0x10 * int(gpu))


def kernel_log(root):
    return os.path.join(os.path.abspath(root), KERNEL_LOG)


def add_xid(root, gpu, xid, text="simulated fault"):
    """Append the line the driver logs for Xid `xid` on GPU `gpu` to ROOT/kernel.log."""
    bus = 0x18 + 0x10 * int(gpu)
    line = "[%12.6f] NVRM: Xid (PCI:0000:%02x:00): %d, pid=4242, name=python3, %s\n" % (
        time.monotonic(), bus, int(xid), text)
    with open(kernel_log(root), "a") as f:
        f.write(line)
    return line


# ---- reading allocations (must agree with scan_gpu() in fakenvml.c) -------------

_proc_starttime = fleet_proc.start_time  # field 22 of /proc/PID/stat, or None once gone


def _proc_inner_pid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except OSError:
        pass
    return None


def visible_pid(pid, starttime):
    """The PID our /proc shows for a holder, or None if we cannot see it."""
    if _proc_starttime(pid) == starttime:
        return pid
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            cand = int(entry)
            if _proc_starttime(cand) == starttime and _proc_inner_pid(cand) == pid:
                return cand
    return None


def _read_alloc(fd):
    fields = {}
    for line in os.pread(fd, 1024, 0).decode().splitlines():
        key, unused, value = line.partition("=")
        fields[key] = int(value) if value.isdigit() else value
    return fields


class _ReaderLock:
    """alloc/.lock: one reader or registering holder at a time."""

    def __init__(self, root):
        self.path = os.path.join(root, "nvml", "alloc", ".lock")

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            self.fd = os.open(self.path, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing drops the flock


def _scan(root, delay_ms):
    """Per GPU: {'used': MiB, 'releasing': MiB, 'holders': {pid: MiB}}. Lock held by caller."""
    alloc = os.path.join(root, "nvml", "alloc")
    now = time.monotonic_ns() // 1_000_000  # CLOCK_MONOTONIC, as the C side
    gpus = {}
    for name in os.listdir(alloc):
        if name[:2] not in ("a-", "r-"):
            continue
        path = os.path.join(alloc, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            rec = _read_alloc(fd)
            gpu = gpus.setdefault(int(name[2:].split("-")[0]),
                                  {"used": 0, "releasing": 0, "holders": {}})
            mib = rec.get("mib", 0)
            if name[0] == "a":
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # holder alive
                    gpu["used"] += mib
                    vis = visible_pid(rec.get("pid", -1), rec.get("starttime"))
                    if vis is not None:
                        gpu["holders"][vis] = gpu["holders"].get(vis, 0) + mib
                    continue
                fcntl.flock(fd, fcntl.LOCK_UN)
                if delay_ms <= 0:  # no delay: free once the holder is gone (as on an H200)
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
                    continue
                try:  # start its release clock
                    os.rename(path, os.path.join(alloc, "r-%s-%d" % (name[2:], now)))
                except OSError:
                    pass
                gpu["used"] += mib
                gpu["releasing"] += mib
            elif now - int(name.rsplit("-", 1)[1]) >= delay_ms:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            else:
                gpu["used"] += mib
                gpu["releasing"] += mib
        finally:
            os.close(fd)
    return gpus


def read_status(root):
    """What `simctl gpu status` prints: one dict per GPU (v2 semantics for used_mib)."""
    root = os.path.abspath(root)
    conf = read_config(root)
    with _ReaderLock(root):
        gpus = _scan(root, conf["release_delay_ms"])
    out = []
    for i in range(conf["count"]):
        g = gpus.get(i, {"used": 0, "releasing": 0, "holders": {}})
        g["used"] += int(read_health(root, i)["stuck_mib"])  # held with no process (stick)
        out.append({
            "index": i,
            "uuid": conf.get("uuid%d" % i),
            "total_mib": conf["memory_mib"],
            "reserved_mib": conf["reserved_mib"],
            "used_mib": g["used"],
            "free_mib": max(conf["memory_mib"] - conf["reserved_mib"] - g["used"], 0),
            "releasing_mib": g["releasing"],
            "holders": [{"pid": p, "mib": m} for p, m in sorted(g["holders"].items())],
        })
    return out


# ---- holding memory ---------------------------------------------------------------

class Holding:
    """Device files opened and mmapped, and allocations registered, for one process."""

    def __init__(self, root, gpus, mib, device_files=None, map_gpus=True):
        self.root, self.gpus, self.mib = root, list(gpus), mib
        self.device_files = dict(device_files or {})  # gpu -> path to open instead of dev/nvidiaN
        self.map_gpus = map_gpus
        self.pid = os.getpid()
        self._fds, self._maps, self._allocs = [], [], []  # allocs: (path, locked fd)

    def _open_devices(self):
        dev = os.path.join(self.root, "dev")
        names = ["nvidiactl", "nvidia-uvm"] + ["nvidia%d" % g for g in self.gpus]
        paths = {"nvidia%d" % g: p for g, p in self.device_files.items()}
        for name in names + ["nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"]:
            fd = os.open(paths.get(name) or os.path.join(dev, name), os.O_RDWR)
            self._fds.append(fd)
            if name in names and (self.map_gpus or not name[6:].isdigit()):
                # a CUDA context maps ctl, uvm and each GPU
                self._maps.append(mmap.mmap(fd, PAGE, mmap.MAP_SHARED))

    def _register(self, gpu, starttime):
        alloc = os.path.join(self.root, "nvml", "alloc")
        base = "%d-%d-%s" % (gpu, self.pid, secrets.token_hex(4))
        tmp = os.path.join(alloc, ".t-" + base)
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        # Lock before it becomes visible: an unlocked a-* file means "holder gone".
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, ("gpu=%d\npid=%d\nstarttime=%d\nmib=%d\n"
                      % (gpu, self.pid, starttime, self.mib)).encode())
        path = os.path.join(alloc, "a-" + base)
        os.rename(tmp, path)
        self._allocs.append((path, fd))

    def close(self):
        """Release early (like cudaFree + context destroy): memory is free at once."""
        if self._allocs:
            with _ReaderLock(self.root):
                for path, fd in self._allocs:
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                    os.close(fd)
        self._allocs = []
        for m in self._maps:
            m.close()
        for fd in self._fds:
            os.close(fd)
        self._maps, self._fds = [], []
        if self in _LIVE:
            _LIVE.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hold(root, gpus, mib, device_files=None, map_gpus=True):
    """Open+mmap the GPUs' device files and allocate MIB MiB on each, for this process.

    device_files: {gpu: path} opened instead of ROOT/dev/nvidiaN (a container's
    renamed node, a bind mount); map_gpus=False: open the GPUs' files, map none.
    """
    root = os.path.abspath(root)
    conf = read_config(root)
    gpus = sorted(set(int(g) for g in gpus))
    for g in gpus:
        if not 0 <= g < conf["count"]:
            raise ValueError("no GPU %d on %s (it has %d)" % (g, root, conf["count"]))
    # A real CUDA process is charged its context too (NVML per process and v2 used).
    h = Holding(root, gpus, int(mib) + int(conf.get("context_mib", 0)), device_files, map_gpus)
    try:
        h._open_devices()
        starttime = _proc_starttime(h.pid)
        with _ReaderLock(root):  # check-and-register is atomic against other holders
            state = _scan(root, conf["release_delay_ms"])
            for g in gpus:
                used = state.get(g, {}).get("used", 0)
                free = conf["memory_mib"] - conf["reserved_mib"] - used
                if h.mib > free:
                    raise OutOfMemory(
                        "CUDA out of memory. Tried to allocate %d MiB. GPU %d has a total "
                        "capacity of %d MiB of which %d MiB is free."
                        % (h.mib, g, conf["memory_mib"], max(free, 0)))
            for g in gpus:
                h._register(g, starttime)
    except BaseException:
        h.close()
        raise
    _LIVE.append(h)
    return h
