"""Recorded signals and their conditioning into regressor inputs (sampling, filtering, differentiation)."""
