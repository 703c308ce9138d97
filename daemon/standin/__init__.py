"""Test doubles, not the product: a local Anthropic Messages API server standing in for the
Bridge, a deterministic rule-based curator, and ``make demo``."""
