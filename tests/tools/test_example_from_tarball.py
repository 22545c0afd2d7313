"""tests/tools/example_from_tarball.sh (the example-from-tarball stage of tests/run_all.sh).

The stage itself runs the whole example; these cases check, quickly, that the script fails
when the example does and cleans up after itself. A full broken run (a role that serves
another model name than verify.yml expects) is the manual check of docs/testing-your-role.md:
`GPUFLEET_EXAMPLE_BREAK=1 bash tests/tools/example_from_tarball.sh default` must end non-zero.
"""
import glob
import os
import re
import shutil
import subprocess

from simlib import kit_cli  # sim/ is on sys.path (tests/conftest.py)

from tests.support import paths

SCRIPT = os.path.join(paths.REPO, "tests", "tools", "example_from_tarball.sh")
EXAMPLE = os.path.join(paths.REPO, "docs", "examples", "my_role")


def run_script(example, *scenarios):
    before = set(glob.glob("/tmp/gpufleet-example.*"))
    env = dict(os.environ, GPUFLEET_EXAMPLE_DIR=str(example))
    proc = subprocess.run(["bash", SCRIPT, *scenarios], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)
    left = set(glob.glob("/tmp/gpufleet-example.*")) - before
    return proc, left


def test_a_broken_example_fails_the_stage_and_leaves_nothing(tmp_path):
    """molecule refuses the copy's molecule.yml: the script ends with molecule's exit code,
    names the example, and removes its temporary directory (the tarball, the installed copy)."""
    broken = tmp_path / "my_role"
    shutil.copytree(EXAMPLE, broken)
    (broken / "molecule" / "default" / "molecule.yml").write_text("scenario: [not, a, mapping\n")
    proc, left = run_script(broken, "default")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "molecule test failed" in proc.stderr, proc.stdout + proc.stderr
    assert str(broken) in proc.stderr
    assert not left, "temporary directories left: %s" % sorted(left)


def requirement_names(path):
    names = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(re.split(r"[<>=!~ ]", line, maxsplit=1)[0].lower())
    return names


def test_the_example_requirements_hold_what_the_fleet_checks_for():
    """The example's requirements.txt installs every module `simctl kit check` requires of
    the hosts' interpreter (the controller's, by default), and ansible-core and molecule."""
    needed = {dist.lower() for unused, dist in kit_cli.MODULES} | {"ansible-core", "molecule"}
    have = requirement_names(os.path.join(EXAMPLE, "requirements.txt"))
    assert needed <= have, "missing from the example's requirements.txt: %s" % sorted(needed - have)
