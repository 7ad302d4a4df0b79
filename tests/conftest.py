"""Test-wide settings.

Hypothesis runs derandomised by default, so the test command gives the same verdict on every run and in CI; set
HYPOTHESIS_PROFILE=explore for fresh random examples when hunting for bugs.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
