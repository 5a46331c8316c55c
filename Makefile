# Weir: `make up` runs the service on localhost, `make test` runs the suite.
# Both create and fill the virtualenv in .venv themselves.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Re-installs only when the dependency list changes (or the venv is missing).
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

# gRPC moves large messages 2-4x faster when glibc keeps freed memory instead of
# returning it to the OS after every large allocation.
export MALLOC_MMAP_THRESHOLD_ ?= 1073741824
export MALLOC_TRIM_THRESHOLD_ ?= 1073741824

.PHONY: install test up bench protos clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

# The browser tests need Chromium: installed here when possible (as in CI), else one line says why they skip.
# In parallel with pytest-xdist (pyproject's addopts); `make test PYTEST_ARGS="-n 0"` runs serially.
test: install
	@sh .ci/install-browser
	$(PY) -m pytest -q $(PYTEST_ARGS)

up: install
	$(PY) -m deploy.local

bench: install
	$(PY) -m bench all

protos: install
	$(PY) -m grpc_protos.generate

clean:
	rm -rf $(VENV) .pytest_cache
