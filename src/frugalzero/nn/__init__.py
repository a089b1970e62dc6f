"""The policy-value network, its batched evaluator and its files."""
