"""Make the checkout importable as ansible_collections.gpufleet.serving.

`make setup` links build/collections/ansible_collections/gpufleet/serving to
the repository root; tests import the collection's code through that link,
exactly as Ansible does.
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, "build", "collections")
for _path in (COLLECTIONS, os.path.join(REPO, "tests")):  # tests/: shared helpers (_polling)
    if _path not in sys.path:
        sys.path.insert(0, _path)
