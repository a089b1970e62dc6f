"""frugalzero.data."""
