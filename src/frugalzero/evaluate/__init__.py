"""frugalzero.evaluate."""
