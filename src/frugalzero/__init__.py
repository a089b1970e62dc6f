"""frugalzero: AlphaZero-style chess engines trained on modest compute."""

__version__ = "0.1.0"
