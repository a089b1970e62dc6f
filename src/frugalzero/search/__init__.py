"""frugalzero.search."""
