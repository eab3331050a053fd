"""Exciting trajectories: Fourier parametrisation, motion limits, playback. Their optimal design simulates
and identifies candidate runs, so it sits above the simulation: payload_id_core.excitation_design."""
