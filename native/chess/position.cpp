// Positions: construction (python-chess's fields, FEN), their checks, FEN output, keys,
// make-move (python-chess's push for standard chess), insufficient material, frames and meta.
#include <algorithm>
#include <cstring>

#include "chess/bitboard.h"

namespace fz {

namespace {

constexpr char PIECE_LETTERS[] = "pnbrqk";

// Standard chess keeps a right only for a rook on a1/h1 (a8/h8) beside its king on e1 (e8):
// python-chess's Board.clean_castling_rights() for a board without a move stack.
Bitboard clean_castling(const Position& p, Bitboard rights) {
    Bitboard white = rights & p.pieces[WHITE][ROOK - 1] & (bb(A1) | bb(H1));
    Bitboard black = rights & p.pieces[BLACK][ROOK - 1] & (bb(A8) | bb(H8));
    if (!(p.pieces[WHITE][KING - 1] & bb(E1))) white = 0;
    if (!(p.pieces[BLACK][KING - 1] & bb(E8))) black = 0;
    return white | black;
}

// python-chess's Board._valid_ep_square(): is ``square`` where the opponent's last double
// push passed (right rank, its pawn in front, the square and the one behind it empty)?
bool valid_ep_square(const Position& p, int square) {
    if (square <= 0 || square >= 64) return false;  // python-chess treats square 0 as none
    const bool white = p.turn == WHITE;
    if (rank_of(square) != (white ? 5 : 2)) return false;
    const int pawn = white ? square - 8 : square + 8;
    const int origin = white ? square + 8 : square - 8;
    if (!(p.pieces[!p.turn][PAWN - 1] & bb(pawn))) return false;
    return !(p.occupied & (bb(square) | bb(origin)));
}

bool fail(std::string* error, const char* message) {
    if (error) *error = message;
    return false;
}

// A clock or move number: decimal digits only, at most MAX_CLOCK.
bool parse_number(const std::string& text, int& out) {
    if (text.empty() || text.size() > 10) return false;
    int64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + (c - '0');
    }
    if (value > MAX_CLOCK) return false;
    out = int(value);
    return true;
}

}  // namespace

Position Position::start() {
    Position p;
    const bool ok = from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", p);
    (void)ok;
    return p;
}

Position Position::from_parts(const Bitboard pieces_by_type[6], Bitboard white, Bitboard black,
                              Color turn, Bitboard castling, int ep_square, int halfmove_clock,
                              int fullmove_number) {
    init_tables();
    Position p;
    for (int t = 0; t < 6; ++t) {
        p.pieces[WHITE][t] = pieces_by_type[t] & white;
        p.pieces[BLACK][t] = pieces_by_type[t] & black;
    }
    p.by_color[WHITE] = white;
    p.by_color[BLACK] = black;
    p.occupied = white | black;
    p.turn = turn;
    p.castling = clean_castling(p, castling);
    p.ep_square = ep_square;
    p.halfmove_clock = halfmove_clock;
    p.fullmove_number = fullmove_number;
    p.key = p.compute_key();
    return p;
}

bool Position::from_fen(const std::string& fen, Position& out, std::string* error) {
    init_tables();
    std::vector<std::string> parts;
    {
        std::string token;
        for (char c : fen) {
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                if (!token.empty()) parts.push_back(token);
                token.clear();
            } else {
                token += c;
            }
            if (parts.size() > 6) return fail(error, "a FEN has at most 6 fields");
        }
        if (!token.empty()) parts.push_back(token);
    }
    if (parts.empty()) return fail(error, "empty FEN");
    if (parts.size() > 6) return fail(error, "a FEN has at most 6 fields");

    Bitboard by_type[6] = {}, colours[2] = {};
    const std::string& board = parts[0];
    int rank = 7, file = 0;
    bool previous_digit = false;
    for (char c : board) {
        if (c == '/') {
            if (file != 8 || rank == 0) return fail(error, "the board part needs 8 rows of 8");
            --rank;
            file = 0;
            previous_digit = false;
        } else if (c >= '1' && c <= '8') {
            if (previous_digit) return fail(error, "two digits in a row in the board part");
            file += c - '0';
            if (file > 8) return fail(error, "a row of the board part has more than 8 squares");
            previous_digit = true;
        } else {
            const char lower = char(c | 0x20);
            const char* found = std::strchr(PIECE_LETTERS, lower);
            if (c == 0 || lower == 0 || !found) return fail(error, "bad character in the board");
            if (file >= 8) return fail(error, "a row of the board part has more than 8 squares");
            const int square = rank * 8 + file;
            by_type[found - PIECE_LETTERS] |= bb(square);
            colours[c == lower ? BLACK : WHITE] |= bb(square);
            ++file;
            previous_digit = false;
        }
    }
    if (rank != 0 || file != 8) return fail(error, "the board part needs 8 rows of 8");

    Color turn = WHITE;
    if (parts.size() > 1) {
        if (parts[1] == "w") turn = WHITE;
        else if (parts[1] == "b") turn = BLACK;
        else return fail(error, "the side to move must be w or b");
    }

    Bitboard castling = 0;
    if (parts.size() > 2 && parts[2] != "-") {
        static const char order[] = "KQkq";
        static const int rooks[] = {H1, A1, H8, A8};
        size_t next = 0;  // the letters in this order, each at most once
        for (char c : parts[2]) {
            while (next < 4 && order[next] != c) ++next;
            if (next == 4) return fail(error, "bad castling field");
            castling |= bb(rooks[next++]);
        }
    }

    int ep_square = -1;
    if (parts.size() > 3 && parts[3] != "-") {
        const std::string& ep = parts[3];
        if (ep.size() != 2 || ep[0] < 'a' || ep[0] > 'h' || ep[1] < '1' || ep[1] > '8')
            return fail(error, "bad en-passant field");
        ep_square = (ep[1] - '1') * 8 + (ep[0] - 'a');
    }

    int halfmove = 0, fullmove = 1;
    if (parts.size() > 4 && !parse_number(parts[4], halfmove))
        return fail(error, "bad half-move clock");
    if (parts.size() > 5) {
        if (!parse_number(parts[5], fullmove)) return fail(error, "bad full-move number");
        fullmove = std::max(fullmove, 1);  // python-chess reads 0 as 1
    }

    return from_parts_checked(by_type, colours[WHITE], colours[BLACK], turn, castling, ep_square,
                              halfmove, fullmove, out, error);
}

bool Position::from_parts_checked(const Bitboard pieces_by_type[6], Bitboard white,
                                  Bitboard black, int turn, Bitboard castling, int ep_square,
                                  int64_t halfmove_clock, int64_t fullmove_number, Position& out,
                                  std::string* error) {
    if (turn != WHITE && turn != BLACK) return fail(error, "bad side to move");
    if (halfmove_clock < 0 || halfmove_clock > MAX_CLOCK) return fail(error, "bad half-move clock");
    if (fullmove_number < 1 || fullmove_number > MAX_CLOCK)
        return fail(error, "bad full-move number");
    if (white & black) return fail(error, "a square holds both colours");
    Bitboard typed = 0;
    for (int t = 0; t < 6; ++t) {
        if (typed & pieces_by_type[t]) return fail(error, "a square holds two pieces");
        typed |= pieces_by_type[t];
    }
    if (typed != (white | black)) return fail(error, "pieces disagree with the colours");
    // keys and en-passant checks look for the kings: make sure they are there first
    for (Bitboard colour : {white, black})
        if (popcount(pieces_by_type[KING - 1] & colour) != 1)
            return fail(error, "each side needs exactly one king");
    Position p = from_parts(pieces_by_type, white, black, Color(turn), castling, -1,
                            int(halfmove_clock), int(fullmove_number));
    if (ep_square != -1) {
        if (!valid_ep_square(p, ep_square)) return fail(error, "impossible en-passant square");
        p.ep_square = ep_square;
        p.key = p.compute_key();
    }
    if (!p.consistent(error)) return false;
    out = p;
    return true;
}

bool Position::consistent(std::string* error) const {
    if (turn != WHITE && turn != BLACK) return fail(error, "bad side to move");
    if (by_color[WHITE] & by_color[BLACK]) return fail(error, "a square holds both colours");
    if (occupied != (by_color[WHITE] | by_color[BLACK]))
        return fail(error, "occupied squares disagree with the colours");
    for (int c = 0; c < 2; ++c) {
        Bitboard seen = 0;
        for (int t = 0; t < 6; ++t) {
            if (pieces[c][t] & seen) return fail(error, "a square holds two pieces");
            seen |= pieces[c][t];
        }
        if (seen != by_color[c]) return fail(error, "pieces disagree with the colours");
        if (popcount(pieces[c][KING - 1]) != 1)
            return fail(error, "each side needs exactly one king");
        if (popcount(by_color[c]) > 16) return fail(error, "more than 16 pieces of one colour");
        if (popcount(pieces[c][PAWN - 1]) > 8) return fail(error, "more than 8 pawns of one colour");
        if (pieces[c][PAWN - 1] & BACKRANKS) return fail(error, "a pawn on a back rank");
    }
    if (attackers(*this, turn, king_square(Color(!turn)), occupied))
        return fail(error, "the side not to move is in check");
    if (ep_square != -1 && !valid_ep_square(*this, ep_square))
        return fail(error, "impossible en-passant square");
    if (castling != clean_castling(*this, castling))
        return fail(error, "castling rights without their king and rook");
    if (halfmove_clock < 0 || halfmove_clock > MAX_CLOCK) return fail(error, "bad half-move clock");
    if (fullmove_number < 1 || fullmove_number > MAX_CLOCK)
        return fail(error, "bad full-move number");
    if (key != compute_key()) return fail(error, "stale key");
    return true;
}

int Position::piece_type_at(int square) const {
    const Bitboard b = bb(square);
    if (!(occupied & b)) return 0;
    const Bitboard* own = pieces[by_color[WHITE] & b ? WHITE : BLACK];
    for (int t = 0; t < 6; ++t)
        if (own[t] & b) return t + 1;
    return 0;
}

int Position::king_square(Color colour) const { return msb(pieces[colour][KING - 1]); }

uint64_t Position::compute_key() const {
    uint64_t k = turn == BLACK ? ZOBRIST.black_to_move : 0;
    for (int c = 0; c < 2; ++c)
        for (int t = 0; t < 6; ++t)
            for (Bitboard b = pieces[c][t]; b; b &= b - 1) k ^= ZOBRIST.piece[c][t][lsb(b)];
    for (Bitboard b = castling; b; b &= b - 1) k ^= ZOBRIST.castling[lsb(b)];
    if (ep_square >= 0 && has_legal_en_passant()) k ^= ZOBRIST.ep_file[file_of(ep_square)];
    return k;
}

std::string Position::fen() const {
    std::string text;
    for (int rank = 7; rank >= 0; --rank) {
        int empty = 0;
        for (int file = 0; file < 8; ++file) {
            const int square = rank * 8 + file;
            const int type = piece_type_at(square);
            if (!type) {
                ++empty;
                continue;
            }
            if (empty) text += char('0' + empty);
            empty = 0;
            const char letter = PIECE_LETTERS[type - 1];
            text += by_color[WHITE] & bb(square) ? char(letter - 'a' + 'A') : letter;
        }
        if (empty) text += char('0' + empty);
        if (rank) text += '/';
    }
    text += turn == WHITE ? " w " : " b ";
    const size_t before = text.size();
    if (castling & bb(H1)) text += 'K';
    if (castling & bb(A1)) text += 'Q';
    if (castling & bb(H8)) text += 'k';
    if (castling & bb(A8)) text += 'q';
    if (text.size() == before) text += '-';
    text += ' ';
    if (ep_square >= 0 && has_legal_en_passant()) {
        text += char('a' + file_of(ep_square));
        text += char('1' + rank_of(ep_square));
    } else {
        text += '-';
    }
    text += ' ' + std::to_string(halfmove_clock) + ' ' + std::to_string(fullmove_number);
    return text;
}

void Position::play(Move move) {
    const int from = move.from(), to = move.to();
    const Color us = turn, them = Color(!us);
    const Bitboard from_bb = bb(from), to_bb = bb(to);
    const auto& zp = ZOBRIST.piece;
    uint64_t k = key ^ ZOBRIST.black_to_move;
    if (ep_square >= 0 && has_legal_en_passant()) k ^= ZOBRIST.ep_file[file_of(ep_square)];

    int piece = 0;
    while (!(pieces[us][piece] & from_bb)) ++piece;  // type - 1 of the moving piece
    int captured = -1;
    if (by_color[them] & to_bb) {
        captured = 0;
        while (!(pieces[them][captured] & to_bb)) ++captured;
        pieces[them][captured] ^= to_bb;
        by_color[them] ^= to_bb;
        k ^= zp[them][captured][to];
    }

    ++halfmove_clock;
    if (us == BLACK) ++fullmove_number;
    if (piece == PAWN - 1 || captured >= 0) halfmove_clock = 0;

    Bitboard rights = castling & ~from_bb & ~to_bb;
    if (piece == KING - 1) rights &= us == WHITE ? ~RANK_1 : ~RANK_8;
    for (Bitboard changed = rights ^ castling; changed; changed &= changed - 1)
        k ^= ZOBRIST.castling[lsb(changed)];
    castling = rights;

    pieces[us][piece] ^= from_bb;
    k ^= zp[us][piece][from];
    Bitboard own = by_color[us] ^ from_bb;
    const int old_ep = ep_square;
    ep_square = -1;
    int placed = piece;
    if (piece == PAWN - 1) {
        const int diff = to - from;
        if (diff == 16 && rank_of(from) == 1) {
            ep_square = from + 8;
        } else if (diff == -16 && rank_of(from) == 6) {
            ep_square = from - 8;
        } else if (to == old_ep && captured < 0 && (diff == 7 || diff == 9 || diff == -7 ||
                                                    diff == -9)) {  // en passant
            const int victim = us == WHITE ? to - 8 : to + 8;
            pieces[them][PAWN - 1] ^= bb(victim);
            by_color[them] ^= bb(victim);
            k ^= zp[them][PAWN - 1][victim];
        }
        if (move.promotion()) placed = move.promotion() - 1;
    } else if (piece == KING - 1 && (to - from == 2 || from - to == 2)) {
        const int rook_from = to > from ? from + 3 : from - 4;
        const int rook_to = to > from ? from + 1 : from - 1;
        pieces[us][ROOK - 1] ^= bb(rook_from) | bb(rook_to);
        own ^= bb(rook_from) | bb(rook_to);
        k ^= zp[us][ROOK - 1][rook_from] ^ zp[us][ROOK - 1][rook_to];
    }
    pieces[us][placed] |= to_bb;
    k ^= zp[us][placed][to];
    by_color[us] = own | to_bb;
    occupied = by_color[WHITE] | by_color[BLACK];
    turn = them;
    if (ep_square >= 0 && has_legal_en_passant()) k ^= ZOBRIST.ep_file[file_of(ep_square)];
    key = k;
}

bool Position::insufficient_material() const {
    const Bitboard knights = pieces[WHITE][KNIGHT - 1] | pieces[BLACK][KNIGHT - 1];
    const Bitboard bishops = pieces[WHITE][BISHOP - 1] | pieces[BLACK][BISHOP - 1];
    const Bitboard pawns = pieces[WHITE][PAWN - 1] | pieces[BLACK][PAWN - 1];
    // python-chess's Board.has_insufficient_material(colour), for both colours
    for (int c = 0; c < 2; ++c) {
        const Bitboard* own = pieces[c];
        const Bitboard* other = pieces[!c];
        if (own[PAWN - 1] | own[ROOK - 1] | own[QUEEN - 1]) return false;
        if (own[KNIGHT - 1]) {
            // a lone knight, and nothing but a king and queens opposite (else self-mate)
            const Bitboard other_minors = other[PAWN - 1] | other[KNIGHT - 1] |
                                          other[BISHOP - 1] | other[ROOK - 1];
            if (popcount(by_color[c]) > 2 || other_minors) return false;
            continue;
        }
        if (own[BISHOP - 1]) {
            // bishops all on one colour of square (both sides' bishops), no pawns or knights
            const bool same_colour = !(bishops & DARK_SQUARES) || !(bishops & LIGHT_SQUARES);
            if (!same_colour || pawns || knights) return false;
        }
    }
    return true;
}

void Position::frame(uint64_t out[FRAME_WORDS], int repetitions) const {
    for (int t = 0; t < 6; ++t) {
        out[t] = pieces[WHITE][t];
        out[6 + t] = pieces[BLACK][t];
    }
    out[12] = uint64_t(std::clamp(repetitions, 0, 2));
}

void Position::meta(int64_t out[META_FIELDS]) const {
    out[0] = turn == WHITE;
    out[1] = (castling & bb(H1)) != 0;
    out[2] = (castling & bb(A1)) != 0;
    out[3] = (castling & bb(H8)) != 0;
    out[4] = (castling & bb(A8)) != 0;
    out[5] = halfmove_clock;
    out[6] = fullmove_number;
}

}  // namespace fz
