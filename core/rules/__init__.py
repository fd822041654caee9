"""Validation rules. Each rule takes a ``Context`` and yields ``Finding``s."""
