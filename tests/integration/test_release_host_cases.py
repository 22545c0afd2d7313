"""gpu_release on cases real GPU hosts meet, through `ansible`, on the fake GPU kit.

Each test starts its processes in a private PID namespace (`ns`): a paused server tree,
a restart loop with a pause, a look-alike of the module's interpreter, bad inputs.
"""

from simlib import fakegpu

from tests.support.ansible import run_module
from tests.support.gpu import hold

SGLANG = r"sglang::|sglang\.launch_server"


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def test_null_pattern_is_refused_not_read_as_the_regex_none(gpu_root, ns):
    """A YAML null in patterns became the regex 'None' and matched `python3 None_of_your_business.py`."""
    root, env = gpu_root
    bystander = hold(root, 0, 100, "python3 None_of_your_business.py", ns, env)
    res = run_module("gpu_release", {"patterns": [None], "gpus": [0]}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert "patterns: item 1 is null" in res["msg"], res["msg"]
    assert ns.alive(bystander)
