# Weir: `make up` runs the service on localhost, `make test` runs the suite.
# Both create and fill the virtualenv in .venv themselves.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two distributions: the SDK `weir` (sdk/pyproject.toml, installs alone) and the server side `weir-server`
# (pyproject.toml, which requires the SDK).
PYPROJECTS := sdk/pyproject.toml pyproject.toml
# Every dependency of both, pinned with its hashes; `make lock` regenerates it from their pyproject.toml.
LOCK := requirements.lock
# Re-installs only when a dependency list or the lock changes (or the venv is missing).
# The SDK's native record codec (weir/_records_native.c, built by sdk/setup.py) is rebuilt when it changes.
NATIVE := sdk/setup.py weir/_records_native.c
STAMP := $(VENV)/.installed-$(shell cat $(PYPROJECTS) $(LOCK) $(NATIVE) | cksum | cut -d' ' -f1)

# gRPC moves large messages 2-4x faster when glibc keeps freed memory instead of
# returning it to the OS after every large allocation.
export MALLOC_MMAP_THRESHOLD_ ?= 1073741824
export MALLOC_TRIM_THRESHOLD_ ?= 1073741824

# Python caches compiled modules (__pycache__, ignored by git) even where the environment asks it not
# to: the suite and `make up` start hundreds of processes (brokers, controllers, clients), and each
# would otherwise compile several hundred modules from source, about 0.4 s of CPU per broker start.
unexport PYTHONDONTWRITEBYTECODE
# Compiled once before the processes start, in parallel, instead of by each process that imports them.
SOURCES := weir broker_nodes webapp grpc_protos log_formats server_runtime spark_pipelines bench deploy tests
BYTECODE := $(PY) -m compileall -q -j 0 $(SOURCES) > /dev/null

.PHONY: install lock test up bench protos clean

install: $(STAMP)

# The exact versions of the lock (hashes checked), then Weir itself, editable, adding nothing: the SDK
# first, so that the server side's `weir==` requirement is met by this repository's SDK (never PyPI's).
$(STAMP): $(PYPROJECTS) $(LOCK) $(NATIVE)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r $(LOCK)
	@$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e ./sdk -e .
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

# After changing a pyproject.toml's dependencies: resolve both lists (and the dev extra) again, keeping the
# pins still allowed; `make lock LOCK_ARGS=--upgrade` moves every pin to the newest allowed release.
# They are compiled as one requirement list, not as the two projects: the server side's `weir==` requirement
# is the SDK of this repository (installed editable), and the index's `weir` is another project.
LOCK_INPUT := $(VENV)/lock-input.txt
lock: install
	$(PY) -c 'import sys, tomllib; from packaging.requirements import Requirement; \
		projects = [tomllib.load(open(path, "rb"))["project"] for path in sys.argv[1:]]; \
		lines = [line for project in projects for line in project["dependencies"] + project.get("optional-dependencies", {}).get("dev", [])]; \
		print("\n".join(line for line in lines if Requirement(line).name != "weir"))' $(PYPROJECTS) > $(LOCK_INPUT)
	$(PY) -m piptools compile --quiet --generate-hashes --allow-unsafe --strip-extras \
		--no-emit-index-url --no-emit-find-links --no-emit-trusted-host $(LOCK_ARGS) \
		--output-file $(LOCK) $(LOCK_INPUT)

# The browser tests need Chromium: installed here when possible (as in CI), else one line says why they skip.
# In parallel with pytest-xdist (pyproject's addopts); `make test PYTEST_ARGS="-n 0"` runs serially.
test: install
	@sh .ci/install-browser
	@sh .ci/install-kafka-tools
	@$(BYTECODE)
	$(PY) -m pytest -q $(PYTEST_ARGS)

up: install
	@$(BYTECODE)
	$(PY) -m deploy.local

bench: install
	@$(BYTECODE)
	$(PY) -m bench all

protos: install
	$(PY) -m grpc_protos.generate

clean:
	rm -rf $(VENV) .pytest_cache
