// When a search leaf ends the game: chess/rules.py's leaf_status, test for test in its order.
#include "chess/bitboard.h"

namespace fz {

Status leaf_status(const Position& position, int repetitions, int draw_repetitions,
                   bool fifty_move_draw, Move* moves) {
    Status status;
    if (repetitions + 1 >= draw_repetitions) {
        status.ending = Ending::REPETITION;
        return status;
    }
    if (fifty_move_draw && position.halfmove_clock >= 100) {
        // a mate on the hundredth quiet ply still wins (FIDE 9.3 / 5.1)
        const bool mated = position.in_check() && position.count_legal() == 0;
        status.ending = mated ? Ending::CHECKMATE : Ending::FIFTY_MOVES;
        status.value = mated ? -1.0 : 0.0;
        return status;
    }
    const Position& p = position;
    const Bitboard heavy = p.pieces[WHITE][PAWN - 1] | p.pieces[BLACK][PAWN - 1] |
                           p.pieces[WHITE][ROOK - 1] | p.pieces[BLACK][ROOK - 1] |
                           p.pieces[WHITE][QUEEN - 1] | p.pieces[BLACK][QUEEN - 1];
    if (!heavy && p.insufficient_material()) {
        status.ending = Ending::MATERIAL;
        return status;
    }
    const int count = p.legal_moves(moves);
    if (count == 0) {
        const bool mated = p.in_check();
        status.ending = mated ? Ending::CHECKMATE : Ending::STALEMATE;
        status.value = mated ? -1.0 : 0.0;
        return status;
    }
    status.count = count;
    return status;
}

}  // namespace fz
