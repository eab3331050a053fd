"""Synthetic data generators for tests, benches and examples (not used by the identification itself)."""
