"""scripts/system_packages.sh's decisions, with fake dpkg-query, id and apt-get on PATH.

Each case says which packages the fake dpkg-query reports installed and which user
`id -u` reports; the fake apt-get records its arguments instead of installing.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "system_packages.sh"
BASH = shutil.which("bash")


def declared_packages():
    """The PACKAGES=(...) list, read from the script itself (one fact in one place)."""
    match = re.search(r"^PACKAGES=\(([^)]*)\)", SCRIPT.read_text(), re.M)
    return match.group(1).split()


def fake(bindir, name, body):
    path = bindir / name
    path.write_text("#!%s\n%s\n" % (BASH, body))
    path.chmod(0o755)


def run(tmp_path, installed, uid, dpkg=True, env_extra=None):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "apt-get.log"
    (tmp_path / "installed").write_text("\n".join(installed) + "\n")
    if dpkg:
        # dpkg-query -W -f=FMT PKG: "installed" for listed packages, exit 1 otherwise
        # (as the real one does for a package it has never heard of).
        fake(bindir, "dpkg-query",
             'pkg=${@: -1}; while read -r p; do [[ $p == "$pkg" ]] && { printf installed; exit 0; }; '
             'done < %s; exit 1' % (tmp_path / "installed"))
    fake(bindir, "id", 'echo %d' % uid)
    fake(bindir, "apt-get", 'echo "$*" >> %s' % log)
    env = {"PATH": str(bindir), "HOME": str(tmp_path)}
    env.update(env_extra or {})
    proc = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def test_the_fleets_packages_are_declared():
    assert {"openssh-server", "openssh-client", "tini", "psmisc", "util-linux",
            "gcc", "make", "git"} <= set(declared_packages())


@pytest.mark.parametrize("uid", [0, 1000])
def test_nothing_missing_does_nothing(tmp_path, uid):
    proc, calls = run(tmp_path, declared_packages(), uid)
    assert proc.returncode == 0, proc.stderr
    assert calls == []
    assert "all installed" in proc.stdout


def test_root_installs_exactly_the_missing_ones(tmp_path):
    installed = [p for p in declared_packages() if p not in ("tini", "openssh-server")]
    proc, calls = run(tmp_path, installed, 0)
    assert proc.returncode == 0, proc.stderr
    assert calls[0] == "update -qq"
    assert calls[1].startswith("install -y ")
    assert sorted(calls[1].split()[4:]) == ["openssh-server", "tini"], calls
    assert len(calls) == 2


def test_non_root_prints_the_command_and_fails(tmp_path):
    installed = [p for p in declared_packages() if p != "tini"]
    proc, calls = run(tmp_path, installed, 1000)
    assert proc.returncode == 1
    assert calls == [], "a non-root run must not call apt-get"
    assert ("sudo apt-get update && sudo apt-get install -y --no-install-recommends tini"
            in proc.stderr), proc.stderr


def test_skip_checks_nothing(tmp_path):
    proc, calls = run(tmp_path, [], 1000, env_extra={"GPUFLEET_SYSTEM_PACKAGES": "skip"})
    assert proc.returncode == 0 and calls == []


def test_without_dpkg_names_the_missing_commands(tmp_path):
    proc, calls = run(tmp_path, [], 0, dpkg=False)
    assert proc.returncode == 1 and calls == []
    assert "not a Debian system" in proc.stderr
    assert "tini" in proc.stderr.split("missing:", 1)[1]


def test_find_python_refuses_a_version_that_is_not_there(tmp_path):
    env = {"PATH": os.defpath, "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "none")}
    proc = subprocess.run([BASH, str(REPO / "scripts" / "find_python.sh"), "3.99"], env=env,
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "no Python 3.99" in proc.stderr and "PY_NEWEST=" in proc.stderr
