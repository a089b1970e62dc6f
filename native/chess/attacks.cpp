// Magic bitboards for rooks and bishops. The magic numbers below were found by this file's own
// seeded random search (fill() without them) and are kept so start-up skips it (the search
// costs ~130 ms of CPU, paid by every process that imports the module); fill() still checks
// each one against the slow ray walk for every blocker subset, and searches afresh for any that
// fails.
#include <mutex>

#include "chess/bitboard.h"

namespace fz {

Magic ROOK_MAGICS[64];
Magic BISHOP_MAGICS[64];

namespace {

constexpr uint64_t ROOK_MAGICS_FOUND[64] = {
    0x2080084002102080ULL, 0x140004090006000ULL, 0x9500114300082000ULL,
    0x4300061000082100ULL, 0x100110004080002ULL, 0x2080040001800200ULL,
    0x2100060040842b00ULL, 0x900014232008500ULL, 0x1102002081004200ULL,
    0x430200204a088100ULL, 0x500808020001000ULL, 0x11001000090020ULL,
    0x185001005000800ULL, 0x9101000400090002ULL, 0x141004441000200ULL,
    0xc0080070018c080ULL, 0x4000208000400082ULL, 0x210040008100ULL,
    0x160808010002004ULL, 0x8008008801000ULL, 0x440828004012800ULL,
    0x808002000400ULL, 0x4003440002100801ULL, 0x60001005494ULL,
    0x8000800080204002ULL, 0x200400040201000ULL, 0x100080200088ULL,
    0x4800082500100100ULL, 0x8080080040081ULL, 0x22002200291004ULL,
    0x20020400080110ULL, 0x8d01004200010084ULL, 0x6080400080800026ULL,
    0x2040080020201000ULL, 0x200200082801002ULL, 0x3100100084800802ULL,
    0x400080080800400ULL, 0x480800200800400ULL, 0x1000110234001008ULL,
    0x10800058800900ULL, 0x380002000404000ULL, 0x210400081110020ULL,
    0x20040200101001ULL, 0x110100008008080ULL, 0x8004020040400ULL,
    0x120020004008080ULL, 0x13008440012ULL, 0x1448105081020024ULL,
    0x8100400080002080ULL, 0xc0002000408080ULL, 0x223600080300880ULL,
    0xc10008008001080ULL, 0x5104008008000480ULL, 0x12000410080200ULL,
    0x4422000804010200ULL, 0xa00800049002080ULL, 0x404288000110441ULL,
    0x102082004102ULL, 0x800402001000811ULL, 0x82210884100101ULL,
    0x2002008420900802ULL, 0x5000400080201ULL, 0x1042000104080082ULL,
    0x4402008040241102ULL,
};
constexpr uint64_t BISHOP_MAGICS_FOUND[64] = {
    0x502420408020044ULL, 0x26100322009208ULL, 0x8a10442090200080ULL,
    0x80820802a082010ULL, 0x824504005002024ULL, 0x3000821140011000ULL,
    0x8029080802692030ULL, 0xc0444c10080210ULL, 0x420801440084ULL,
    0x8441020c90700ULL, 0x809900102182896ULL, 0x8328880a04280020ULL,
    0x11040040240ULL, 0x1041a422008ULL, 0xa0098838021181ULL,
    0x2030048120800ULL, 0x8240000608081110ULL, 0x2086042042101ULL,
    0x102010102040500ULL, 0xc008000422002020ULL, 0x4104110202020000ULL,
    0x9000808880400ULL, 0x4200408104100400ULL, 0x400024c192031003ULL,
    0x1202900241044804ULL, 0x2080020210418ULL, 0x200880010802400ULL,
    0x10040020440008ULL, 0x410840220802002ULL, 0x2048002042020120ULL,
    0x1004012080402ULL, 0x82000a210420ULL, 0x1204020a80202008ULL,
    0x4001100829d00102ULL, 0x6425008380020ULL, 0x7840400180210ULL,
    0x40020202002080ULL, 0x200402404a8810ULL, 0x488080120004100ULL,
    0x10c2240040002201ULL, 0x1008180904440800ULL, 0x4004140404100211ULL,
    0x20008a0804061200ULL, 0x8200002018008109ULL, 0x8a00480104401400ULL,
    0xa21020c08100100ULL, 0x10a2404142a8182ULL, 0x48220842042044ULL,
    0x10480404200400ULL, 0xc818890901000ULL, 0x80100044040404c3ULL,
    0xa01004884040000ULL, 0x81004421820040ULL, 0x5000041004484018ULL,
    0x2391101141040800ULL, 0x2182100212004120ULL, 0x100042080c010460ULL,
    0x8902401241040ULL, 0x40a04080480800ULL, 0x2100208800ULL,
    0xa00400004450400ULL, 0x1080204004041420ULL, 0x4002428802040041ULL,
    0x2002044808010020ULL,
};

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

void fill(Magic* magics, Bitboard* table, bool rook, const uint64_t* found) {
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
        for (bool first = true;; first = false) {
            m.magic = first ? found[sq] : random.sparse();
            if (!first && popcount((m.mask * m.magic) >> 56) < 6) continue;  // too few high bits
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
        fill(ROOK_MAGICS, rook_table, true, ROOK_MAGICS_FOUND);
        fill(BISHOP_MAGICS, bishop_table, false, BISHOP_MAGICS_FOUND);
    });
}

namespace {
const bool initialised = (init_tables(), true);
}

}  // namespace fz
