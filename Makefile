# make setup: everything into the checkout (idempotent). make test: every gate.
# Two venvs: .venv runs the oldest supported ansible-core (requirements.txt, Python
# PY_VERSION), .venv-newest the newest (requirements-newest.txt, PY_NEWEST_VERSION).
# PY / PY_NEWEST name the interpreters; by default scripts/find_python.sh finds them.
PY ?=
PY_NEWEST ?=
PY_VERSION := 3.11
PY_NEWEST_VERSION := 3.12
VENV := .venv
VPY := $(VENV)/bin/python
VENV_NEWEST := .venv-newest
VPY_NEWEST := $(VENV_NEWEST)/bin/python
COLL_LINK := build/collections/ansible_collections/gpufleet/serving

.PHONY: setup setup-vllm system-packages test lint demo demo-engines demo-rollout bench clean

setup: system-packages $(VENV)/.installed $(VENV_NEWEST)/.installed build/fakenvml/libnvidia-ml.so.1 $(COLL_LINK) build/sglang-real/.installed build/router/.installed

# Debian packages for the simulated fleet: installed when missing and run as root,
# else the exact command to run is printed (scripts/system_packages.sh).
system-packages:
	bash scripts/system_packages.sh

$(VENV)/.installed: requirements.txt requirements-common.txt | system-packages
	test -x $(VPY) || { py='$(PY)'; [ -n "$$py" ] || py=$$(bash scripts/find_python.sh $(PY_VERSION)) || exit 1; "$$py" -m venv $(VENV); }
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

$(VENV_NEWEST)/.installed: requirements-newest.txt requirements-common.txt | system-packages
	test -x $(VPY_NEWEST) || { py='$(PY_NEWEST)'; [ -n "$$py" ] || py=$$(bash scripts/find_python.sh $(PY_NEWEST_VERSION)) || exit 1; "$$py" -m venv $(VENV_NEWEST); }
	$(VPY_NEWEST) -m pip install -q --upgrade pip
	$(VPY_NEWEST) -m pip install -q -r requirements-newest.txt
	touch $@

build/fakenvml/libnvidia-ml.so.1: sim/fakenvml/fakenvml.c $(VENV)/.installed
	$(VPY) sim/simctl gpu build build/fakenvml

# Real SGLang (no deps, own directory) for the simulator's command line: sim/realsglang.py.
build/sglang-real/.installed: requirements-sglang.txt requirements-sglang-deps.txt $(VENV)/.installed
	$(VPY) -m pip install -q -r requirements-sglang-deps.txt
	rm -rf build/sglang-real && $(VPY) -m pip install -q --no-deps --target build/sglang-real -r requirements-sglang.txt
	touch $@

# The real sglang-router 0.3.2 (requirements-router.txt) in a venv of its own: the router role's
# tests and the simulated fleet run build/router/bin/smg. Its Python dependencies (fastapi,
# aiohttp, ...) stay out of .venv.
build/router/.installed: requirements-router.txt $(VENV)/.installed
	rm -rf build/router && $(VPY) -m venv build/router
	build/router/bin/python -m pip install -q -r requirements-router.txt
	touch $@

# Real vLLM's (and uvicorn's, prometheus_client's) Python sources, read by the vLLM cases of the
# source tests (tests/unit/plugins/module_utils/_server/test_log.py, _bench/test_accept.py, _engines/test_vllm.py,
# test_vllm_sim.py's flag copy).
# Not part of setup (the demo needs none); `make test` needs it. The wheels are downloaded
# with --no-deps and only .py files unpacked (about 60 MB).
setup-vllm: build/vllm-real/.installed

build/vllm-real/.installed: requirements-vllm.txt $(VENV)/.installed
	rm -rf build/vllm-wheels build/vllm-real
	$(VPY) -m pip download -q --no-deps --only-binary=:all: -d build/vllm-wheels -r requirements-vllm.txt
	$(VPY) scripts/unpack_sources.py build/vllm-wheels build/vllm-real
	rm -rf build/vllm-wheels
	touch $@

$(COLL_LINK):
	mkdir -p $(dir $(COLL_LINK))
	ln -sfn ../../../.. $(COLL_LINK)

test: setup setup-vllm
	bash tests/run_all.sh

# The ruff stage of tests/run_all.sh alone (settings: ruff.toml).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check plugins tests bench scripts sim

# The main job on its embedded default: a simulated 2-host fleet, swap_to_eagle.yml, the report.
demo: setup
	bash scripts/demo.sh

# The engine comparison on a simulated 2-host fleet: compare_engines.yml with EAGLE-3, the table.
demo-engines: setup
	bash scripts/demo_engines.sh

# A rolling swap to EAGLE-3 on a simulated 3-host fleet behind the real sglang-router under a steady
# load through it (rollout_probe): the probe's table, its plot, "0 failed" (docs/rollout.md).
demo-rollout: setup
	bash scripts/demo_rollout.sh

bench: setup
	$(VPY) bench/release_vs_oneliner.py
	$(VPY) bench/client_accuracy.py
	$(VPY) bench/client_ceiling.py

clean:
	rm -rf build tests/output
