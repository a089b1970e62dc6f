"""Speed measurements (``frugalzero bench WHAT``): one module per measured part, the shared
timing helpers in ``timing``."""
