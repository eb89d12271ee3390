"""gpu-platform command line: validate, catalog, plan, check, simulate."""
