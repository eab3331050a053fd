# payload_id: one-command set-up on a fresh machine (Python 3.11-3.13: requirements.lock needs 3.11+; gcc, cmake, x86_64).
#   make demo   set-up, then the simulated cell end to end
#   make demo-monitor  set-up, then the payload monitor on a simulated pick-and-place task
#   make lint   set-up, then ruff and mypy (configured in pyproject.toml)
#   make test   set-up, lint, then the whole test suite
#   make bench  set-up, then every bench/ script -> out/bench.json
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMPS := $(VENV)/.stamps
MSG_SOURCES := $(shell find src/payload_id_msgs -type f 2>/dev/null)
PYTEST_ARGS ?=

.PHONY: setup demo demo-monitor lint test test-fast bench clean check-platform

setup: $(STAMPS)/packages

check-platform:
	@$(PYTHON) tools/check_platform.py

$(STAMPS)/venv: | check-platform
	@$(PYTHON) tools/check_platform.py
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade "pip==26.3"
	@mkdir -p $(STAMPS) && touch $@

# Pinned dependencies; re-run only when requirements.lock changes (a second `make setup` does no network work).
$(STAMPS)/deps: requirements.lock $(STAMPS)/venv
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@touch $@

# payload_id_msgs built with cmake + rosidl into the venv itself.
$(STAMPS)/interfaces: $(STAMPS)/deps $(MSG_SOURCES) tools/build_interfaces.sh
	tools/build_interfaces.sh $(VENV)
	@touch $@

# PYTHONWARNINGS: setuptools prints its "Editable installation." banner once per package even under --quiet;
# it says nothing a user acts on.
$(STAMPS)/packages: $(STAMPS)/interfaces src/payload_id_core/setup.py src/payload_id_ros/setup.py
	PYTHONWARNINGS="ignore:Editable installation" $(VPY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
		-e src/payload_id_core -e src/payload_id_ros
	@touch $@

demo: setup
	$(VPY) -m payload_id_ros.demo

demo-monitor: setup
	$(VPY) -m payload_id_ros.demo_monitor

# Every Python tree of the repository; the packages by their import directory so mypy names them
# payload_id_core.* / payload_id_ros.* (pyproject.toml's mypy_path).
LINT_PATHS := src/payload_id_core/payload_id_core src/payload_id_ros/payload_id_ros test bench tools examples launch

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/mypy $(LINT_PATHS)

# Parallel, a ROS domain per worker (test/conftest.py). A test module's tests on one worker, so its module
# fixtures (a cell, an identification) are set up once. --no-loadscope-reorder keeps conftest's order: the
# longest modules first (the last run's times, else those with slow tests), so no worker ends alone on one.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# CI's target (.ci/run): a lint finding fails it like a failing test. Two phases, both always run: every test
# but the wall_clock ones on the workers, then the wall_clock ones alone in one process, so no other test
# starves the nodes whose rates and deadlines they assert. Each phase ends with its 25 slowest tests.
test: lint
	@status=0; \
	$(VPY) -m pytest test -m "not wall_clock" $(PYTEST_PARALLEL) --durations=25 $(PYTEST_ARGS) || status=$$?; \
	$(VPY) -m pytest test -m wall_clock -p no:xdist --durations=25 $(PYTEST_ARGS) || status=$$?; \
	exit $$status

# Everything except the slow multi-process end-to-end tests.
test-fast: setup
	$(VPY) -m pytest test -m "not slow" $(PYTEST_PARALLEL) $(PYTEST_ARGS)

bench: setup
	$(VPY) tools/run_bench.py bench out/bench.json

clean:
	rm -rf $(VENV) build out .pytest_cache .mypy_cache .ruff_cache
