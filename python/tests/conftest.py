import numpy as np
import pytest
from hypothesis import settings

import kernel_bandits as kb

# Property tests check the same examples on every run (CI must never fail at random): Hypothesis
# derives them from each test's name rather than from a random seed, and keeps no database of
# past failures between runs. A failure it finds is then found again, and must be fixed.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")


@pytest.fixture
def rng():
    return np.random.default_rng(20261124)


def all_bounds(kernel):
    """One instance of each of the eight bounds, with parameters that make every one valid."""
    return [
        kb.Ay(kernel),
        kb.Igp(kernel, horizon=100),
        kb.Amm(kernel),
        kb.Dmm(kernel),
        kb.Cmm(kernel),
        kb.KUcb(kernel),
        kb.Bkb(kernel, seed=3),
        kb.EkUcb(kernel, seed=3),
    ]
