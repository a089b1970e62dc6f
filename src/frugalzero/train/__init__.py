"""frugalzero.train."""
