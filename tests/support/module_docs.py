# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A module's documentation against its real argument spec, and the module run as Ansible runs it.

documented(name): the module's DOCUMENTATION with its fragments merged, as `ansible-doc` reads it
(one run for every module of the collection, kept for the session).

spec(name): the argument spec the module really builds, read from the module itself: run with
an option it does not have, AnsibleModule refuses the arguments before the module does anything
(nothing is read, started or signalled), and its answer's invocation lists every option of the
spec with its default. The modules that are only the documentation of an action plugin have no
main(): their spec is the action's ARGUMENT_SPEC (test the action file for that).

run(name, args, env): the module's file run by this interpreter with ANSIBLE_MODULE_ARGS, as
Ansible's module execution does on the host; the result dict, with `_rc`.
"""
import functools
import json
import os
import subprocess
import sys
import tempfile

from tests.support.ansible import ansible_env
from tests.support.paths import COLLECTIONS, REPO, VENV_BIN

MODULES = os.path.join(REPO, "plugins", "modules")
UNKNOWN = "gf_no_such_option"


@functools.lru_cache(maxsize=None)
def _all_docs():
    names = sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py"))
    out = subprocess.run([os.path.join(VENV_BIN, "ansible-doc"), "--json", "-t", "module"]
                         + ["gpufleet.serving." + n for n in names],
                         env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return {fqcn.rsplit(".", 1)[1]: data["doc"] for fqcn, data in json.loads(out.stdout).items()}


def documented(name):
    return _all_docs()[name]


def run(name, args, env=None, timeout=60):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
        handle.flush()
        proc = subprocess.run([sys.executable, os.path.join(MODULES, name + ".py"), handle.name],
                              env=dict(env or os.environ, PYTHONPATH=COLLECTIONS), capture_output=True,
                              text=True, timeout=timeout, check=False)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("%s printed no JSON result (rc %d):\n%s\n%s" % (name, proc.returncode, proc.stdout, proc.stderr))
    result["_rc"] = proc.returncode
    return result


def spec(name):
    """{option: default} of the module's real argument spec (None where it has no default)."""
    result = run(name, {UNKNOWN: 1})
    assert result.get("failed"), "%s accepted an option it does not have: %s" % (name, result)
    args = dict(result["invocation"]["module_args"])
    args.pop(UNKNOWN)
    return args


def mismatches(name):
    """How the documented options differ from the real spec's names and defaults (empty when they agree)."""
    options = documented(name).get("options") or {}
    real = spec(name)
    out = ["%s: documented, not in the argument spec" % o for o in sorted(set(options) - set(real))]
    out += ["%s: in the argument spec, not documented" % o for o in sorted(set(real) - set(options))]
    for option in sorted(set(options) & set(real)):
        default = options[option].get("default")
        if real[option] != default and not (default is None and real[option] in ([], {}, "")):
            out.append("%s: documented default %r, the spec's %r" % (option, default, real[option]))
    return out


def action_mismatches(name):
    """How a documentation-only module's options differ from its action plugin's ARGUMENT_SPEC
    (type, required, default, elements); empty when they agree."""
    import importlib  # pylint: disable=import-outside-toplevel

    action = importlib.import_module("ansible_collections.gpufleet.serving.plugins.action." + name)
    options = documented(name).get("options") or {}
    real = action.ARGUMENT_SPEC
    out = ["%s: documented, not in the action's spec" % o for o in sorted(set(options) - set(real))]
    out += ["%s: in the action's spec, not documented" % o for o in sorted(set(real) - set(options))]
    for option in sorted(set(options) & set(real)):
        for key, unset in (("type", "str"), ("required", False), ("default", None), ("elements", None)):
            doc, spec = options[option].get(key, unset), real[option].get(key, unset)
            if doc != spec:
                out.append("%s: documented %s %r, the action's %r" % (option, key, doc, spec))
    return out
