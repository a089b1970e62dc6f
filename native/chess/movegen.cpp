// Legal move generation in python-chess's order, and perft.
//
// The order is python-chess's Board.generate_legal_moves(), which the search's tie-breaking
// and the order of its priors inherit. Its structure is mirrored here piece for piece:
//   - not in check: generate_pseudo_legal_moves() filtered by _is_safe(): the pieces (king
//     included) from the highest square down, each one's targets from the highest down; then
//     castling (h-side before a-side); then pawn captures (pawns from the highest square down,
//     targets from the highest down), single pushes and double pushes (by target square, from
//     the highest down), promotions as Q, R, B, N; last, en-passant captures;
//   - in check: _generate_evasions(): king moves first, then (single check) the same
//     pseudo-legal moves without the king, restricted to capturing or blocking the checker,
//     then the en-passant capture of a checking pawn.
// Filtering a piece's target set by a mask keeps their order, so the pins and the king's safety
// are applied as masks where python-chess tests moves one at a time.
#include "chess/bitboard.h"

namespace fz {

namespace {

constexpr Bitboard ALL = ~Bitboard(0);

// python-chess's Board._slider_blockers(king): own pieces alone between the king and an enemy
// slider that would attack it through them.
Bitboard slider_blockers(const Position& p, Color us, int king) {
    const Bitboard* opp = p.pieces[!us];
    const Bitboard queens = opp[QUEEN - 1];
    Bitboard snipers = (rook_attacks(king, 0) & (opp[ROOK - 1] | queens)) |
                       (bishop_attacks(king, 0) & (opp[BISHOP - 1] | queens));
    Bitboard blockers = 0;
    for (; snipers; snipers &= snipers - 1) {
        const Bitboard b = between(king, lsb(snipers)) & p.occupied;
        if (b && !(b & (b - 1))) blockers |= b;
    }
    return blockers & p.by_color[us];
}

// python-chess's Board._ep_skewered: would taking en passant with ``capturer`` expose the king
// along the rank (or a diagonal) once both pawns leave it?
bool ep_skewered(const Position& p, int king, int capturer) {
    const int last_double = p.ep_square + (p.turn == WHITE ? -8 : 8);
    const Bitboard occupancy =
        (p.occupied & ~bb(last_double) & ~bb(capturer)) | bb(p.ep_square);
    const Bitboard* opp = p.pieces[!p.turn];
    const Bitboard queens = opp[QUEEN - 1];
    if (rook_attacks(king, occupancy) & rank_mask(rank_of(king)) & (opp[ROOK - 1] | queens))
        return true;
    return (bishop_attacks(king, occupancy) & (opp[BISHOP - 1] | queens)) != 0;
}

// The pawns that may capture en passant (pseudo-legally) onto p.ep_square.
Bitboard ep_capturers(const Position& p) {
    const int ep = p.ep_square;
    if (ep <= 0 || (p.occupied & bb(ep))) return 0;
    const Color us = p.turn;
    return p.pieces[us][PAWN - 1] & pawn_attacks(Color(!us), ep) &
           rank_mask(us == WHITE ? 4 : 3);
}

// _is_safe for an en-passant capture: the capturer's pin and the skewer along the rank.
bool ep_safe(const Position& p, int king, Bitboard blockers, int capturer) {
    if ((blockers & bb(capturer)) && !(line(king, capturer) & bb(p.ep_square))) return false;
    return !ep_skewered(p, king, capturer);
}

template <bool Count>
class Generator {
public:
    Generator(const Position& p, Move* out)
        : p_(p),
          out_(out),
          us_(p.turn),
          them_(Color(!p.turn)),
          own_(p.by_color[p.turn]),
          king_(msb(p.pieces[p.turn][KING - 1])),
          blockers_(slider_blockers(p, p.turn, king_)) {}

    int run() {
        const Bitboard checkers = attackers(p_, them_, king_, p_.occupied);
        if (!checkers) {
            pseudo_legal(true, ALL);
            return n_;
        }
        // _generate_evasions: the king steps off every checking slider's line
        Bitboard attacked = 0;
        const Bitboard* opp = p_.pieces[them_];
        Bitboard sliders = checkers & (opp[BISHOP - 1] | opp[ROOK - 1] | opp[QUEEN - 1]);
        for (; sliders; sliders &= sliders - 1) {
            const int checker = lsb(sliders);
            attacked |= line(king_, checker) & ~bb(checker);
        }
        add_targets(king_, safe_for_king(king_attacks(king_) & ~own_ & ~attacked));
        const int checker = msb(checkers);
        if (bb(checker) != checkers) return n_;  // double check: only the king moves
        const Bitboard target = between(king_, checker) | checkers;
        pseudo_legal(false, target);
        const int ep = p_.ep_square;
        if (ep > 0 && !(bb(ep) & target) && ep + (us_ == WHITE ? -8 : 8) == checker)
            en_passant(ALL);
        return n_;
    }

private:
    void add(int from, int to, int promotion) {
        if constexpr (!Count) out_[n_] = Move(from, to, promotion);
        ++n_;
    }

    void add_targets(int from, Bitboard targets) {
        if constexpr (Count) {
            n_ += popcount(targets);
        } else {
            while (targets) {
                const int to = msb(targets);
                targets ^= bb(to);
                out_[n_++] = Move(from, to);
            }
        }
    }

    void add_pawn_targets(int from, Bitboard targets) {
        if constexpr (Count) {
            n_ += popcount(targets & ~BACKRANKS) + 4 * popcount(targets & BACKRANKS);
        } else {
            while (targets) {
                const int to = msb(targets);
                targets ^= bb(to);
                add_pawn_move(from, to);
            }
        }
    }

    void add_pawn_move(int from, int to) {
        if (bb(to) & BACKRANKS) {
            add(from, to, QUEEN);
            add(from, to, ROOK);
            add(from, to, BISHOP);
            add(from, to, KNIGHT);
        } else {
            add(from, to, 0);
        }
    }

    // The squares of ``targets`` no enemy piece attacks (with the king still in place).
    Bitboard safe_for_king(Bitboard targets) const {
        Bitboard safe = 0;
        for (Bitboard t = targets; t; t &= t - 1) {
            const int to = lsb(t);
            if (!attackers(p_, them_, to, p_.occupied)) safe |= bb(to);
        }
        return safe;
    }

    Bitboard pin_filter(int from, Bitboard targets) const {
        return (blockers_ & bb(from)) ? targets & line(king_, from) : targets;
    }

    // generate_pseudo_legal_moves(from_mask, to_mask) filtered by _is_safe, where from_mask is
    // everything (``with_king``) or everything but the king (evasions).
    void pseudo_legal(bool with_king, Bitboard to_mask) {
        const Bitboard* own = p_.pieces[us_];
        const Bitboard occupied = p_.occupied;
        const Bitboard allowed = ~own_ & to_mask;
        Bitboard movers = own_ & ~own[PAWN - 1];
        if (!with_king) movers &= ~own[KING - 1];
        if constexpr (Count) {
            // the order does not matter when counting: one piece type at a time
            for (Bitboard b = own[KNIGHT - 1] & ~blockers_; b; b &= b - 1)
                n_ += popcount(knight_attacks(lsb(b)) & allowed);  // a pinned knight is stuck
            for (Bitboard b = own[BISHOP - 1] | own[QUEEN - 1]; b; b &= b - 1) {
                const int from = lsb(b);
                n_ += popcount(pin_filter(from, bishop_attacks(from, occupied) & allowed));
            }
            for (Bitboard b = own[ROOK - 1] | own[QUEEN - 1]; b; b &= b - 1) {
                const int from = lsb(b);
                n_ += popcount(pin_filter(from, rook_attacks(from, occupied) & allowed));
            }
            if (with_king) n_ += popcount(safe_for_king(king_attacks(king_) & allowed));
        } else {
            while (movers) {
                const int from = msb(movers);
                const Bitboard from_bb = bb(from);
                movers ^= from_bb;
                Bitboard targets;
                if (own[KNIGHT - 1] & from_bb) {
                    targets = knight_attacks(from);
                } else if (own[BISHOP - 1] & from_bb) {
                    targets = bishop_attacks(from, occupied);
                } else if (own[ROOK - 1] & from_bb) {
                    targets = rook_attacks(from, occupied);
                } else if (own[QUEEN - 1] & from_bb) {
                    targets = queen_attacks(from, occupied);
                } else {
                    add_targets(from, safe_for_king(king_attacks(from) & allowed));
                    continue;
                }
                add_targets(from, pin_filter(from, targets & allowed));
            }
        }
        if (with_king) castling_moves();

        const Bitboard pawns = own[PAWN - 1];
        if (!pawns) return;
        const Bitboard opp = p_.by_color[them_];
        for (Bitboard b = pawns; b;) {
            const int from = msb(b);
            b ^= bb(from);
            add_pawn_targets(from, pin_filter(from, pawn_attacks(us_, from) & opp & to_mask));
        }

        const bool white = us_ == WHITE;
        Bitboard single = (white ? pawns << 8 : pawns >> 8) & ~occupied;
        Bitboard twice = (white ? single << 8 : single >> 8) & ~occupied &
                         (white ? rank_mask(2) | rank_mask(3) : rank_mask(5) | rank_mask(4));
        single &= to_mask;
        twice &= to_mask;
        for (Bitboard pinned = pawns & blockers_; pinned; pinned &= pinned - 1) {
            // a pinned pawn pushes only along its pin (the king's file)
            const int from = lsb(pinned);
            const Bitboard keep = line(king_, from);
            const int one = white ? from + 8 : from - 8;
            const int two = white ? from + 16 : from - 16;
            if (!(keep & bb(one))) single &= ~bb(one);
            if (two >= 0 && two < 64 && !(keep & bb(two))) twice &= ~bb(two);
        }
        const int back = white ? -8 : 8;
        if constexpr (Count) {
            n_ += popcount(single & ~BACKRANKS) + 4 * popcount(single & BACKRANKS) +
                  popcount(twice);
        } else {
            while (single) {
                const int to = msb(single);
                single ^= bb(to);
                add_pawn_move(to + back, to);
            }
            while (twice) {
                const int to = msb(twice);
                twice ^= bb(to);
                add(to + 2 * back, to, 0);
            }
        }
        en_passant(to_mask);
    }

    // generate_pseudo_legal_ep(to_mask) filtered by _is_safe.
    void en_passant(Bitboard to_mask) {
        const int ep = p_.ep_square;
        if (ep <= 0 || !(bb(ep) & to_mask)) return;
        for (Bitboard capturers = ep_capturers(p_); capturers;) {
            const int from = msb(capturers);
            capturers ^= bb(from);
            if (ep_safe(p_, king_, blockers_, from)) add(from, ep, 0);
        }
    }

    // generate_castling_moves: standard chess only (king on e1/e8, rooks on the a/h files,
    // the rights clean), h-side first.
    void castling_moves() {
        const Bitboard backrank = us_ == WHITE ? RANK_1 : RANK_8;
        Bitboard rights = p_.castling & backrank;
        if (!rights) return;
        const Bitboard king = p_.pieces[us_][KING - 1];
        const Bitboard occupied = p_.occupied;
        const int base = us_ == WHITE ? 0 : 56;
        while (rights) {
            const int rook_square = msb(rights);
            rights ^= bb(rook_square);
            const Bitboard rook = bb(rook_square);
            const bool a_side = rook_square < king_;
            const int king_to = base + (a_side ? 2 : 6);
            const int rook_to = base + (a_side ? 3 : 5);
            const Bitboard king_path = between(king_, king_to);
            const Bitboard rook_path = between(rook_square, rook_to);
            if ((occupied ^ king ^ rook) & (king_path | rook_path | bb(king_to) | bb(rook_to)))
                continue;
            if (attacked_any(king_path | king, occupied ^ king)) continue;
            if (attacked_any(bb(king_to), occupied ^ king ^ rook ^ bb(rook_to))) continue;
            add(king_, king_to, 0);
        }
    }

    bool attacked_any(Bitboard squares, Bitboard occupied) const {
        for (; squares; squares &= squares - 1)
            if (attackers(p_, them_, lsb(squares), occupied)) return true;
        return false;
    }

    const Position& p_;
    Move* out_;
    const Color us_, them_;
    const Bitboard own_;
    const int king_;
    const Bitboard blockers_;
    int n_ = 0;
};

}  // namespace

int Position::legal_moves(Move* out) const { return Generator<false>(*this, out).run(); }

int Position::count_legal() const { return Generator<true>(*this, nullptr).run(); }

Bitboard Position::checkers() const {
    return attackers(*this, Color(!turn), king_square(turn), occupied);
}

bool Position::in_check() const { return checkers() != 0; }

// python-chess's has_legal_en_passant(): any(generate_legal_ep()), each capture tested by
// is_into_check(): in check it must be an evasion (blocking the checking line, or taking the
// checking pawn), and _is_safe.
bool Position::has_legal_en_passant() const {
    Bitboard capturers = ep_capturers(*this);
    if (!capturers) return false;
    const int king = king_square(turn);
    const Bitboard checks = checkers();
    if (checks) {
        const int checker = msb(checks);
        if (bb(checker) != checks) return false;
        const bool blocks = (between(king, checker) | checks) & bb(ep_square);
        if (!blocks && ep_square + (turn == WHITE ? -8 : 8) != checker) return false;
    }
    const Bitboard blockers = slider_blockers(*this, turn, king);
    for (; capturers; capturers &= capturers - 1)
        if (ep_safe(*this, king, blockers, lsb(capturers))) return true;
    return false;
}

namespace {

uint64_t perft_recursive(const Position& p, int depth) {
    if (depth == 1) return uint64_t(p.count_legal());
    Move moves[MAX_MOVES];
    const int n = p.legal_moves(moves);
    uint64_t nodes = 0;
    for (int i = 0; i < n; ++i) nodes += perft_recursive(p.after(moves[i]), depth - 1);
    return nodes;
}

}  // namespace

uint64_t perft(const Position& position, int depth) {
    if (depth <= 0) return 1;
    return perft_recursive(position, depth);
}

}  // namespace fz
