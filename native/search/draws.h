// The uniform draws of search-contempt's sampling: SplitMix64, the same stream in the native
// tree and in the Python reference (frugalzero.search.draws), so both sample the same child
// from the same frozen distribution. The other random draws (Dirichlet, Gumbel, the move
// choice) come from the caller's NumPy generator in Python for both cores.
#pragma once

#include <cstdint>

namespace fz {

class Draws {
public:
    explicit Draws(uint64_t seed = 0) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // A double in [0, 1) from the top 53 bits.
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
    uint64_t state() const { return state_; }

private:
    uint64_t state_;
};

}  // namespace fz
