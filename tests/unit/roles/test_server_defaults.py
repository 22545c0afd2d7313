"""An engine without a role of its own gets the same defaults as the public server roles:
_fleet's _fleet_server_defaults (roles/_fleet/tasks/server_direct.yml) against each role's
defaults/main.yml, key by key (a default the role computes from a template is its own)."""
import os

import pytest
import yaml

from tests.support.paths import REPO

ROLES = ("sglang_server", "vllm_server")


def load(*parts):
    with open(os.path.join(REPO, "roles", *parts)) as handle:
        return yaml.safe_load(handle)


DIRECT = load("_fleet", "vars", "main.yml")["_fleet_server_defaults"]


@pytest.mark.parametrize("role", ROLES)
def test_the_direct_path_has_the_roles_defaults(role):
    defaults = load(role, "defaults", "main.yml")
    prefix = role + "_"
    compared = 0
    for key, value in DIRECT.items():
        own = defaults.get(prefix + key)
        assert prefix + key in defaults, "%s%s: not a %s variable" % (prefix, key, role)
        if isinstance(own, str) and "{{" in own:
            continue
        assert own == value, "%s%s: %r in the role, %r in _fleet_server_defaults" % (prefix, key, own, value)
        compared += 1
    assert compared >= len(DIRECT) - 1
