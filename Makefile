# make setup: everything into the checkout (idempotent). make test: every gate.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
COLL_LINK := build/collections/ansible_collections/gpufleet/serving

.PHONY: setup test demo bench clean

setup: $(VENV)/.installed build/fakenvml/libnvidia-ml.so.1 $(COLL_LINK) build/sglang-real/.installed

$(VENV)/.installed: requirements.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

build/fakenvml/libnvidia-ml.so.1: tests/sim/fakenvml/fakenvml.c $(VENV)/.installed
	$(VPY) tests/sim/simctl gpu build build/fakenvml

# Real SGLang (no deps, own directory) for the simulator's command line: tests/sim/realsglang.py.
build/sglang-real/.installed: requirements-sglang.txt requirements-sglang-deps.txt $(VENV)/.installed
	$(VPY) -m pip install -q -r requirements-sglang-deps.txt
	rm -rf build/sglang-real && $(VPY) -m pip install -q --no-deps --target build/sglang-real -r requirements-sglang.txt
	touch $@

$(COLL_LINK):
	mkdir -p $(dir $(COLL_LINK))
	ln -sfn ../../../.. $(COLL_LINK)

test: setup
	bash tests/run_all.sh

# The main job on its embedded default: a simulated 2-host fleet, swap_to_eagle.yml, the report.
demo: setup
	bash scripts/demo.sh

bench: setup
	$(VPY) bench/release_vs_oneliner.py
	$(VPY) bench/client_accuracy.py
	$(VPY) bench/client_ceiling.py

clean:
	rm -rf build tests/output
