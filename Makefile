# Quick start: `make plan` (offline plan + policy check of the default stack) and `make test`.
# Both create .venv and install pinned dependencies on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-prod

.PHONY: plan test realparts bench clean

# The install is not --quiet: minutes of silence look like a hang. pip's default level shows one line per package and
# each download's progress bar (forced on even without a terminal), not the resolver's debug log (-v).
$(VENV)/.installed: pyproject.toml
	@echo "==> creating $(VENV) with $(PYTHON) (first run only)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip"
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "==> installing gpu-platform and its pinned dependencies (Pulumi SDK, the aws, azure-native, gcp, oci,"
	@echo "    kubernetes and random provider SDKs, test tools): about 2 GB unpacked, up to ~10 minutes the first time"
	$(BIN)/python -m pip install --progress-bar on -e '.[all,test]'
	@echo "==> installed; later runs skip this step until pyproject.toml changes"
	touch $@

plan: $(VENV)/.installed
	$(BIN)/gpu-platform plan $(STACK) && $(BIN)/gpu-platform check $(STACK)

# The real parts the cluster and Pulumi CLI tests run (Kubernetes control plane, Kueue, Pulumi CLI and its Kubernetes
# provider), built from their Go modules into ~/.cache/gpu-platform/realparts: tens of minutes cold, seconds warm.
realparts:
	tests/realparts/build

# Mermaid's own parser (and jsdom, the DOM it needs) for the test that parses `plan --format mermaid` pictures.
MERMAID := tests/mermaid/node_modules/.package-lock.json
$(MERMAID): tests/mermaid/package-lock.json
	@command -v npm >/dev/null || { echo "make test needs Node.js and npm for tests/mermaid" >&2; exit 1; }
	npm ci --prefix tests/mermaid --no-audit --no-fund
	touch $@

test: $(VENV)/.installed realparts $(MERMAID)
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
