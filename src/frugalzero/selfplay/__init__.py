"""frugalzero.selfplay."""
