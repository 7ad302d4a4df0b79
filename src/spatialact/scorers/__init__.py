"""Scores (SPEC §4): per-step, episode and dataset scores, and the lmms-eval profile."""
