"""frugalzero.pipeline."""
