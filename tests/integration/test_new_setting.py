"""A new server setting is one row of the server spec table plus regenerated docs.

A copy of the collection gets one test-only row (SGLang's --chunked-prefill-size) in
plugins/module_utils/_engines/settings.py; scripts/gen_docs.py rewrites the generated blocks; the
copy then differs from the checkout in the table and the generated files only, and the unchanged
sglang_server role composes the new flag from the new variable (state planned: the command line,
nothing started). The count of what one setting costs is the list asserted below.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess

from test_new_engine import differences

from tests.support.ansible import ansible_env
from tests.support.paths import PYTHON, REPO, VENV_BIN

COPIED = ("galaxy.yml", "meta", "plugins", "playbooks", "roles", "docs")
SETTINGS = "plugins/module_utils/_engines/settings.py"
ROW = '''    Setting("chunked_prefill_size", "int", engines=("sglang",),
            flags={"sglang": ("--chunked-prefill-size", "value")},
            doc="C(--chunked-prefill-size); null leaves SGLang's default."),
'''
# The server settings' extra_args row (the drafter's has one too): the new row goes before it.
ANCHOR = '    Setting("extra_args", "list", elements="str", default=[],\n            flags='
# What gen_docs.py needs beside the collection: itself and the import path it sets.
SUPPORT = ("scripts/gen_docs.py", "tests/__init__.py", "tests/support/__init__.py", "tests/support/paths.py",
           "tests/support/syspath.py")

PLAY = """
- name: Compose an SGLang launch with the new setting
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Plan the server
      ansible.builtin.include_role:
        name: gpufleet.serving.sglang_server
      vars:
        sglang_server_state: planned
        sglang_server_model_path: /models/m
        sglang_server_supervisor: process
        sglang_server_chunked_prefill_size: 4096
        sglang_server_log_dir: {tmp}/log
        sglang_server_state_dir: {tmp}/state
    - name: Show the command line
      ansible.builtin.debug:
        msg: "ARGV {{{{ sglang_server_plan.argv | to_json }}}}"
"""


def copy_with_new_row(root):
    dest = root / "ansible_collections" / "gpufleet" / "serving"
    dest.mkdir(parents=True)
    for name in COPIED:
        source = os.path.join(REPO, name)
        if os.path.isdir(source):
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest / name)
    for rel in SUPPORT:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), dest / rel)
    table = dest / SETTINGS
    text = table.read_text()
    assert text.count(ANCHOR) == 1
    table.write_text(text.replace(ANCHOR, ROW + ANCHOR))
    return dest


def test_a_new_setting_is_one_table_row_and_regenerated_docs(tmp_path):
    collection = copy_with_new_row(tmp_path / "collections")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "collections"))
    gen = subprocess.run([PYTHON, "scripts/gen_docs.py"], cwd=collection, env=env, capture_output=True, text=True,
                         check=False, timeout=120)
    assert gen.returncode == 0, gen.stdout + gen.stderr

    added, changed = differences(pathlib.Path(REPO), collection, COPIED)
    assert added == []
    assert changed == ["docs/playbooks.md", SETTINGS, "roles/sglang_server/README.md",
                       "roles/sglang_server/defaults/main.yml", "roles/sglang_server/meta/argument_specs.yml"]
    assert "`sglang_server_chunked_prefill_size` | null | `--chunked-prefill-size`" in (
        collection / "roles/sglang_server/README.md").read_text()
    assert "`chunked_prefill_size`" in (collection / "docs/playbooks.md").read_text()  # an experiment's server key

    playbook = tmp_path / "plan.yml"
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # the copy, not the checkout's build/collections
    playbook.write_text(PLAY.format(tmp=tmp_path))
    run = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
                         cwd=tmp_path, env=ansible_env({"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
                                                        "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}),
                         capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (argv,) = [json.loads(json.loads('"%s"' % m)) for m in re.findall(r'"msg": "ARGV (.*)"', run.stdout)]
    at = argv.index("--chunked-prefill-size")
    assert argv[at + 1] == "4096" and argv.index("--enable-metrics") < at
