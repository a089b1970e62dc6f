// Bitboard tables and attack lookups of the chess core: leaper attacks, lines and segments
// between squares and Zobrist keys are computed at compile time; slider attacks use magic
// bitboards whose tables are filled once, before main (attacks.cpp), and are read-only after.
//
// Names follow python-chess where a function mirrors one of its tables: between(a, b) is
// chess.between (the squares strictly between two aligned squares), line(a, b) is chess.ray
// (the whole line through both, edge to edge, or 0 when they are not aligned).
#pragma once

#include <array>
#include <cstdint>

#include "chess/position.h"

namespace fz {

constexpr Bitboard FILE_A = 0x0101010101010101ULL;
constexpr Bitboard FILE_H = FILE_A << 7;
constexpr Bitboard RANK_1 = 0xFFULL;
constexpr Bitboard RANK_8 = RANK_1 << 56;
constexpr Bitboard BACKRANKS = RANK_1 | RANK_8;
constexpr Bitboard DARK_SQUARES = 0xAA55AA55AA55AA55ULL;
constexpr Bitboard LIGHT_SQUARES = ~DARK_SQUARES;

constexpr int A1 = 0, C1 = 2, D1 = 3, E1 = 4, F1 = 5, G1 = 6, H1 = 7;
constexpr int A8 = 56, C8 = 58, D8 = 59, E8 = 60, F8 = 61, G8 = 62, H8 = 63;

constexpr Bitboard rank_mask(int rank) { return RANK_1 << (8 * rank); }
constexpr int rank_of(int square) { return square >> 3; }
constexpr int file_of(int square) { return square & 7; }

inline int popcount(Bitboard b) { return __builtin_popcountll(b); }
inline int lsb(Bitboard b) { return __builtin_ctzll(b); }
inline int msb(Bitboard b) { return 63 ^ __builtin_clzll(b); }

namespace detail {

constexpr int QUEEN_STEPS[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                   {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};  // (rank, file)
constexpr int KNIGHT_STEPS[8][2] = {{2, 1},   {1, 2},   {-1, 2}, {-2, 1},
                                    {-2, -1}, {-1, -2}, {1, -2}, {2, -1}};

constexpr bool on_board(int rank, int file) {
    return rank >= 0 && rank < 8 && file >= 0 && file < 8;
}

// The squares a slider on ``square`` reaches in the directions [first, first + count) of
// QUEEN_STEPS, stopping at (and including) the first occupied square. Slow; builds tables.
constexpr Bitboard slide(int square, Bitboard occupied, int first, int step) {
    Bitboard result = 0;
    for (int d = first; d < 8; d += step) {
        int rank = rank_of(square) + QUEEN_STEPS[d][0], file = file_of(square) + QUEEN_STEPS[d][1];
        while (on_board(rank, file)) {
            int to = rank * 8 + file;
            result |= bb(to);
            if (occupied & bb(to)) break;
            rank += QUEEN_STEPS[d][0];
            file += QUEEN_STEPS[d][1];
        }
    }
    return result;
}
constexpr Bitboard slow_rook(int square, Bitboard occupied) { return slide(square, occupied, 0, 2); }
constexpr Bitboard slow_bishop(int square, Bitboard occupied) {
    return slide(square, occupied, 1, 2);
}

struct Leapers {
    Bitboard knight[64] = {};
    Bitboard king[64] = {};
    Bitboard pawn[2][64] = {};  // [colour of the pawn][square]: the squares it attacks
};

constexpr Leapers make_leapers() {
    Leapers t;
    for (int sq = 0; sq < 64; ++sq) {
        int r = rank_of(sq), f = file_of(sq);
        for (const auto& s : KNIGHT_STEPS)
            if (on_board(r + s[0], f + s[1])) t.knight[sq] |= bb((r + s[0]) * 8 + f + s[1]);
        for (const auto& s : QUEEN_STEPS)
            if (on_board(r + s[0], f + s[1])) t.king[sq] |= bb((r + s[0]) * 8 + f + s[1]);
        for (int df : {-1, 1}) {
            if (on_board(r + 1, f + df)) t.pawn[WHITE][sq] |= bb((r + 1) * 8 + f + df);
            if (on_board(r - 1, f + df)) t.pawn[BLACK][sq] |= bb((r - 1) * 8 + f + df);
        }
    }
    return t;
}

struct Lines {
    Bitboard between[64][64] = {};
    Bitboard line[64][64] = {};
};

constexpr Lines make_lines() {
    Lines t;
    for (int a = 0; a < 64; ++a) {
        for (const auto& s : QUEEN_STEPS) {
            // the whole line through a in this direction and the opposite one
            Bitboard full = bb(a);
            for (int sign : {1, -1}) {
                int r = rank_of(a) + sign * s[0], f = file_of(a) + sign * s[1];
                while (on_board(r, f)) {
                    full |= bb(r * 8 + f);
                    r += sign * s[0];
                    f += sign * s[1];
                }
            }
            Bitboard segment = 0;
            int r = rank_of(a) + s[0], f = file_of(a) + s[1];
            while (on_board(r, f)) {
                int b = r * 8 + f;
                t.between[a][b] = segment;
                t.line[a][b] = full;
                segment |= bb(b);
                r += s[0];
                f += s[1];
            }
        }
    }
    return t;
}

constexpr uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

struct Zobrist {
    uint64_t piece[2][6][64] = {};
    uint64_t castling[64] = {};  // by rook square; only A1, H1, A8, H8 are ever used
    uint64_t ep_file[8] = {};
    uint64_t black_to_move = 0;
};

constexpr Zobrist make_zobrist() {
    Zobrist z;
    uint64_t state = 0x66727567616C7A30ULL;  // any fixed seed: keys never leave a process
    for (auto& colour : z.piece)
        for (auto& type : colour)
            for (auto& key : type) key = splitmix64(state);
    for (auto& key : z.castling) key = splitmix64(state);
    for (auto& key : z.ep_file) key = splitmix64(state);
    z.black_to_move = splitmix64(state);
    return z;
}

}  // namespace detail

inline constexpr detail::Leapers LEAPERS = detail::make_leapers();
inline constexpr detail::Lines LINES = detail::make_lines();
inline constexpr detail::Zobrist ZOBRIST = detail::make_zobrist();

inline Bitboard knight_attacks(int square) { return LEAPERS.knight[square]; }
inline Bitboard king_attacks(int square) { return LEAPERS.king[square]; }
inline Bitboard pawn_attacks(Color colour, int square) { return LEAPERS.pawn[colour][square]; }
inline Bitboard between(int a, int b) { return LINES.between[a][b]; }
inline Bitboard line(int a, int b) { return LINES.line[a][b]; }

// A magic lookup: the attack set of a slider is table[((occupied & mask) * magic) >> shift].
struct Magic {
    Bitboard mask = 0;
    uint64_t magic = 0;
    const Bitboard* table = nullptr;
    unsigned shift = 64;
    unsigned index(Bitboard occupied) const {
        return unsigned(((occupied & mask) * magic) >> shift);
    }
};

extern Magic ROOK_MAGICS[64];
extern Magic BISHOP_MAGICS[64];

// Fills the magic tables (idempotent, thread-safe). attacks.cpp calls it during static
// initialisation; Position's constructors call it too, for code that runs before that.
void init_tables();

inline Bitboard rook_attacks(int square, Bitboard occupied) {
    const Magic& m = ROOK_MAGICS[square];
    return m.table[m.index(occupied)];
}
inline Bitboard bishop_attacks(int square, Bitboard occupied) {
    const Magic& m = BISHOP_MAGICS[square];
    return m.table[m.index(occupied)];
}
inline Bitboard queen_attacks(int square, Bitboard occupied) {
    return rook_attacks(square, occupied) | bishop_attacks(square, occupied);
}

// python-chess's Board.attackers_mask(colour, square, occupied): the pieces of ``colour``
// attacking ``square`` when the occupied squares are ``occupied``.
inline Bitboard attackers(const Position& p, Color colour, int square, Bitboard occupied) {
    const Bitboard* own = p.pieces[colour];
    const Bitboard queens = own[QUEEN - 1];
    return (king_attacks(square) & own[KING - 1]) | (knight_attacks(square) & own[KNIGHT - 1]) |
           (pawn_attacks(Color(!colour), square) & own[PAWN - 1]) |
           (rook_attacks(square, occupied) & (own[ROOK - 1] | queens)) |
           (bishop_attacks(square, occupied) & (own[BISHOP - 1] | queens));
}

}  // namespace fz
