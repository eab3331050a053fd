"""Exciting trajectories: Fourier parametrisation, motion limits, playback, optimal design."""
