"""The policy pack run offline: exemptions, evaluation of the pack's own policy objects, and report formats."""
