// Chess for the search's hot path: bitboard positions, legal moves in python-chess's order,
// make-move, Zobrist keys, the end-of-game rules and the network's inputs (frames, meta, policy
// indices), each exactly as frugalzero.chess and frugalzero.chess.rules define them in Python.
//
// python-chess stays the reference: every function here is tested move for move against it
// (tests/test_native_chess.py), and a position reaches this code only after python-chess has
// accepted it as valid (exactly one king a side, no pawns on the back ranks, a possible check,
// a consistent en-passant square), so the generator may assume those invariants.
//
// Conventions shared with python-chess: squares 0 = a1 .. 63 = h8; colours BLACK = 0, WHITE = 1;
// piece types PAWN = 1 .. KING = 6 (index 0 unused in the arrays below is avoided by storing
// [type - 1]); castling rights as a bitboard of the rooks' squares (A1, H1, A8, H8).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace fz {

using Bitboard = uint64_t;

enum Color : int { BLACK = 0, WHITE = 1 };
enum PieceType : int { PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };

constexpr Bitboard bb(int square) { return Bitboard(1) << square; }

// A move in 16 bits: from | to << 6 | promotion << 12, promotion 0 (none) or KNIGHT..QUEEN.
// Castling is the king's two-square move (e1g1), as python-chess writes it in standard chess.
struct Move {
    uint16_t raw = 0;

    constexpr Move() = default;
    constexpr explicit Move(uint16_t r) : raw(r) {}
    constexpr Move(int from, int to, int promotion = 0)
        : raw(uint16_t(from | (to << 6) | (promotion << 12))) {}
    constexpr int from() const { return raw & 63; }
    constexpr int to() const { return (raw >> 6) & 63; }
    constexpr int promotion() const { return raw >> 12; }
    constexpr bool operator==(const Move& other) const { return raw == other.raw; }
    std::string uci() const;
};

// Room for every legal move of any position python-chess's is_valid() accepts. A position
// reachable from the start has at most 218, but is_valid() allows up to 15 queens a side
// (at most 15 * 27 + 8 + 2 = 415 moves), so 256 would not be a safe bound.
constexpr int MAX_MOVES = 512;
// Clocks above this are refused (from_fen, consistent(), frugalzero.chess.native): play()
// counts on, and an int must never overflow.
constexpr int MAX_CLOCK = 1 << 30;

// How a position ends the game, in the order chess/rules.py:leaf_status tests them.
enum class Ending : uint8_t { NONE, CHECKMATE, STALEMATE, REPETITION, FIFTY_MOVES, MATERIAL };

// The position's words of a frame (frugalzero.chess.encoding): 12 piece bitboards in absolute
// colours (White P N B R Q K, then Black P N B R Q K) and the repetition count (0, 1, 2+).
constexpr int FRAME_WORDS = 13;
constexpr int META_FIELDS = 7;
constexpr int HISTORY = 8;
constexpr int NUM_MOVES = 4672;

struct Position {
    Bitboard pieces[2][6] = {};  // [colour][type - 1]
    Bitboard by_color[2] = {};
    Bitboard occupied = 0;
    Color turn = WHITE;
    Bitboard castling = 0;  // clean rights (python-chess's clean_castling_rights)
    int ep_square = -1;     // python-chess's ep_square: set after every double push, else -1
    int halfmove_clock = 0;
    int fullmove_number = 1;
    uint64_t key = 0;  // Zobrist key of the FIDE identity (position_key): pieces, turn, rights,
                       // and the en-passant file only when an en-passant capture is legal

    static Position start();
    // From python-chess's fields (already validated by python-chess). ``castling`` is cleaned:
    // only rooks on A1/H1 (A8/H8) beside a king on E1 (E8) keep their right.
    static Position from_parts(const Bitboard pieces_by_type[6], Bitboard white, Bitboard black,
                               Color turn, Bitboard castling, int ep_square, int halfmove_clock,
                               int fullmove_number);
    // The same, checked first: false (``error`` set, ``out`` untouched) unless the fields make
    // a consistent() position. The bindings build positions from Python with this.
    static bool from_parts_checked(const Bitboard pieces_by_type[6], Bitboard white,
                                   Bitboard black, int turn, Bitboard castling, int ep_square,
                                   int64_t halfmove_clock, int64_t fullmove_number,
                                   Position& out, std::string* error = nullptr);
    // Standard FEN (tests and the sanitizer driver; Python passes parts). Returns false on a
    // malformed FEN or a position that fails consistent(), leaving ``error`` set; never reads
    // out of bounds on any input. Castling rights are cleaned as in from_parts.
    static bool from_fen(const std::string& fen, Position& out, std::string* error = nullptr);
    std::string fen() const;  // python-chess's Board.fen() (en passant only when legal)

    // The invariants the generator relies on, checked (python-chess's is_valid() implies all
    // of them): one king a side, at most 16 pieces and 8 pawns a side, no pawn on a back rank,
    // disjoint consistent bitboards, the side not to move not in check, a consistent
    // en-passant square, clean castling rights, clocks in 0..MAX_CLOCK (fullmove from 1), the
    // key equal to compute_key(). Tests, from_fen and the bindings call it; the hot path never.
    bool consistent(std::string* error = nullptr) const;

    int piece_type_at(int square) const;  // 0 when empty
    int king_square(Color colour) const;
    Bitboard checkers() const;  // the opponent's pieces giving check
    bool in_check() const;
    bool has_legal_en_passant() const;
    // Legal moves, in exactly the order python-chess's Board.generate_legal_moves yields them.
    int legal_moves(Move* out) const;
    // Their number, without listing them (perft's bulk counting).
    int count_legal() const;
    // Play a legal move (python-chess's push: clocks, rights, en-passant square, key).
    void play(Move move);
    Position after(Move move) const {
        Position next = *this;
        next.play(move);
        return next;
    }
    // The key from scratch (play() keeps ``key`` up to date incrementally).
    uint64_t compute_key() const;
    // python-chess's Board.is_insufficient_material (both sides).
    bool insufficient_material() const;

    void frame(uint64_t out[FRAME_WORDS], int repetitions) const;
    void meta(int64_t out[META_FIELDS]) const;
};

// The AlphaZero policy index of ``move`` played by ``turn`` (frugalzero.chess.moves), or -1.
int policy_index(Move move, Color turn);

// chess/rules.py:leaf_status: the ending (or NONE), the value for the side to move, and, when
// the game goes on, the legal moves written to ``moves`` (their number in ``count``).
struct Status {
    Ending ending = Ending::NONE;
    double value = 0.0;
    int count = 0;
};
Status leaf_status(const Position& position, int repetitions, int draw_repetitions,
                   bool fifty_move_draw, Move* moves);

// Leaf nodes at ``depth`` (bulk-counted at the last ply).
uint64_t perft(const Position& position, int depth);

// The positions of one game, as frugalzero.chess.history.GameHistory keeps them: each
// position's key, its frame and how often it occurred before.
class History {
public:
    explicit History(const Position& root);
    void push(Move move);  // a legal move of the current position
    bool pop();            // false (and nothing changes) at the root
    const Position& current() const { return positions_.back(); }
    const Position& at(int ply) const { return positions_[ply]; }  // 0 = the root
    int size() const { return int(positions_.size()); }
    // Earlier occurrences of the current position, at most 2: GameHistory.repetitions (the
    // count its frame carries). count() is exact.
    int repetitions() const { return reps_.back(); }
    int repetitions_at(int ply) const { return reps_[ply]; }
    int count(uint64_t key) const;  // occurrences of ``key`` so far
    // The last ``n`` frames, newest first, zero frames past the start: n * FRAME_WORDS words.
    void frames(uint64_t* out, int n) const;

private:
    std::vector<Position> positions_;
    std::vector<uint8_t> reps_;
    std::unordered_map<uint64_t, int> counts_;
    // positions so far by the low bits of their key: a zero answers count() for most keys (a
    // search's leaves, nearly all new) without the hash map's division and pointer chase
    static constexpr uint64_t FILTER = 1023;
    std::array<uint16_t, FILTER + 1> filter_{};
};

}  // namespace fz
