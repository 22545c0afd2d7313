"""Old kit copies in a cache: which ones nothing uses any more, and their removal.

A build keyed by another collection version or interpreter leaves the previous copy in
CACHE/kits. `simctl kit build --prune` removes, after its own kit is complete:
  - every other complete copy (KEY, 16 hex digits, with .complete) that was not handed out
    by a build in the last GRACE seconds (a fleet about to start from it: `build` touches
    .complete) and that no live process uses: none runs from it, has it as its working
    directory, maps a file of it (the fake NVML) or names it in its environment (a fleet
    host's sessions);
  - a half-made copy (KEY.tmpPID) whose builder PID is gone.
Nothing else in the cache is touched. A pruned copy is built again on its next use.
"""
import os
import re
import shutil
import time

KEY = re.compile(r"^[0-9a-f]{16}$")
STAGING = re.compile(r"^[0-9a-f]{16}\.tmp(\d+)$")
GRACE = 3600.0  # seconds a copy a build handed out is kept whatever runs


def handed_out(kit):
    """Mark KIT as just handed out by a build (the mtime of its .complete)."""
    os.utime(os.path.join(kit, ".complete"))


def _mentions(pid, needle):
    """Does process PID run from, sit in, map or name NEEDLE (a path ending in /)?"""
    base = "/proc/%d/" % pid
    for link in ("exe", "cwd"):
        try:
            if (os.readlink(base + link) + "/").startswith(needle):
                return True
        except OSError:
            pass
    for name in ("cmdline", "environ", "maps"):
        try:
            with open(base + name, "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        if needle.encode() in text:
            return True
    return False


def in_use(kit):
    """PIDs of live processes that use KIT (this one excepted)."""
    needle = os.path.realpath(kit).rstrip("/") + "/"
    users = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and _mentions(int(name), needle):
            users.append(int(name))
    return users


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune(kits, keep):
    """Remove what nothing uses in KITS (a cache's kits/) except KEEP; returns
    (removed, kept_in_use): the names removed, and {name: [pid, ...]} of copies in use."""
    removed, kept = [], {}
    for name in sorted(os.listdir(kits)):
        path = os.path.join(kits, name)
        if name == os.path.basename(keep) or not os.path.isdir(path) or os.path.islink(path):
            continue
        staging = STAGING.match(name)
        if staging:
            if _alive(int(staging.group(1))):
                continue
        elif not (KEY.match(name) and os.path.exists(os.path.join(path, ".complete"))):
            continue
        elif time.time() - os.path.getmtime(os.path.join(path, ".complete")) < GRACE:
            continue
        else:
            users = in_use(path)
            if users:
                kept[name] = users
                continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed, kept
