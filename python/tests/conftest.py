import numpy as np
import pytest

import kernel_bandits as kb


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
