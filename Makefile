# make setup: everything into the checkout (idempotent). make test: every gate.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
COLL_LINK := build/collections/ansible_collections/gpufleet/serving

.PHONY: setup test unit sanity lint molecule demo clean

setup: $(VENV)/.installed build/fakenvml/libnvidia-ml.so.1 $(COLL_LINK)

$(VENV)/.installed: requirements.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

build/fakenvml/libnvidia-ml.so.1: tests/sim/fakenvml/fakenvml.c $(VENV)/.installed
	$(VPY) tests/sim/simctl gpu build build/fakenvml

$(COLL_LINK):
	mkdir -p $(dir $(COLL_LINK))
	ln -sfn ../../../.. $(COLL_LINK)

test: setup
	bash tests/run_all.sh

clean:
	rm -rf build tests/output
