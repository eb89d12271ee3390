# Quick start: `make plan` (offline plan + policy check of the default stack) and `make test`.
# Both create .venv and install pinned dependencies on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= aws-prod

.PHONY: plan test realparts bench clean

$(VENV)/.installed: pyproject.toml
	@echo "==> creating $(VENV) with $(PYTHON) (first run only)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip"
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "==> installing gpu-platform and its pinned dependencies (Pulumi SDK, the aws, azure-native, gcp, oci,"
	@echo "    kubernetes and random provider SDKs, test tools): about 2 GB unpacked, up to ~10 minutes the first time"
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	@echo "==> installed; later runs skip this step until pyproject.toml changes"
	touch $@

plan: $(VENV)/.installed
	$(BIN)/gpu-platform plan $(STACK) && $(BIN)/gpu-platform check $(STACK)

# The real parts the cluster and Pulumi CLI tests run (Kubernetes control plane, Kueue, Pulumi CLI and its Kubernetes
# provider), built from their Go modules into ~/.cache/gpu-platform/realparts: tens of minutes cold, seconds warm.
realparts:
	tests/realparts/build

test: $(VENV)/.installed realparts
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
