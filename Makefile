# Quick start: `make plan` (offline plan + policy check of the default stack) and `make test`.
# Both create .venv and install pinned dependencies on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-prod

.PHONY: plan test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

plan: $(VENV)/.installed
	$(BIN)/gpu-platform plan $(STACK) && $(BIN)/gpu-platform check $(STACK)

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
