"""frugalzero.expert."""
