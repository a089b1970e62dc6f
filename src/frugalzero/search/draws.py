"""The uniform draws of search-contempt's sampling, shared by the native tree and the tests'
oracle (the Python tree it was transcribed from).

A frozen node samples its child from a uniform draw. Both trees take those draws from the same
SplitMix64 stream (``native/search/draws.h`` is its twin), seeded from the tree's NumPy
generator without advancing it, so the native tree and the oracle sample the same children and
the other random draws (Dirichlet and Gumbel noise, the move choice) stay where they were in
the generator's stream.
"""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


class Draws:
    """SplitMix64: ``uniform()`` is a double in [0, 1) from the top 53 bits of each output."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def uniform(self) -> float:
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
        return (z >> 11) * (1.0 / 9007199254740992.0)


def contempt_seed(rng: np.random.Generator) -> int:
    """A seed for a tree's contempt draws, fixed by ``rng``'s seed but drawn without advancing
    ``rng`` (a child of its seed sequence), so adding the draws changed no other random number."""
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if isinstance(seq, np.random.SeedSequence):
        return int(seq.spawn(1)[0].generate_state(1, np.uint64)[0])
    state = repr(rng.bit_generator.state).encode()  # a generator restored from a state
    return int(np.random.SeedSequence(list(state)).generate_state(1, np.uint64)[0])
