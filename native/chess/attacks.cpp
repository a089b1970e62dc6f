// Magic bitboards for rooks and bishops. The magic numbers are found here, at start-up, by a
// seeded random search (deterministic: the same numbers on every run, a few milliseconds), and
// checked against the slow ray walk for every blocker subset as they are found.
#include <mutex>

#include "chess/bitboard.h"

namespace fz {

Magic ROOK_MAGICS[64];
Magic BISHOP_MAGICS[64];

namespace {

constexpr int ROOK_TABLE_SIZE = 102400;   // sum over squares of 2^(relevant blockers)
constexpr int BISHOP_TABLE_SIZE = 5248;
Bitboard rook_table[ROOK_TABLE_SIZE];
Bitboard bishop_table[BISHOP_TABLE_SIZE];

// The squares whose occupancy matters to a slider on ``square``: its empty-board rays without
// their last square (a piece on the board's edge blocks nothing beyond it).
Bitboard relevant_mask(int square, bool rook) {
    Bitboard attacks = rook ? detail::slow_rook(square, 0) : detail::slow_bishop(square, 0);
    Bitboard edges = ((RANK_1 | RANK_8) & ~rank_mask(rank_of(square))) |
                     ((FILE_A | FILE_H) & ~(FILE_A << file_of(square)));
    return attacks & ~edges;
}

struct Random {
    uint64_t state;
    uint64_t next() { return detail::splitmix64(state); }
    uint64_t sparse() { return next() & next() & next(); }  // few bits set: good candidates
};

void fill(Magic* magics, Bitboard* table, bool rook) {
    Random random{rook ? 0x726F6F6BULL : 0x62697368ULL};
    Bitboard occupancy[4096], reference[4096];
    int epoch[4096] = {};
    int attempt = 0;
    Bitboard* next_table = table;
    for (int sq = 0; sq < 64; ++sq) {
        Magic& m = magics[sq];
        m.mask = relevant_mask(sq, rook);
        int bits = popcount(m.mask);
        m.shift = unsigned(64 - bits);
        m.table = next_table;
        int size = 0;
        Bitboard subset = 0;
        do {  // every subset of the mask (the carry-rippler trick)
            occupancy[size] = subset;
            reference[size] = rook ? detail::slow_rook(sq, subset) : detail::slow_bishop(sq, subset);
            ++size;
            subset = (subset - m.mask) & m.mask;
        } while (subset);
        for (;;) {
            m.magic = random.sparse();
            if (popcount((m.mask * m.magic) >> 56) < 6) continue;  // mixes too few high bits
            ++attempt;
            int i = 0;
            for (; i < size; ++i) {
                unsigned index = m.index(occupancy[i]);
                if (epoch[index] < attempt) {
                    epoch[index] = attempt;
                    next_table[index] = reference[i];
                } else if (next_table[index] != reference[i]) {
                    break;  // two subsets with different attacks share an entry
                }
            }
            if (i == size) break;
        }
        next_table += size;
    }
}

}  // namespace

void init_tables() {
    static std::once_flag once;
    std::call_once(once, [] {
        fill(ROOK_MAGICS, rook_table, true);
        fill(BISHOP_MAGICS, bishop_table, false);
    });
}

namespace {
const bool initialised = (init_tables(), true);
}

}  // namespace fz
