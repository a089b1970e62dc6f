// Python bindings of the chess core (native/chess): positions, legal moves, frames, perft.
//
// Everything that comes from Python is checked before C++ relies on it: a Position is built
// only from fields that pass Position::consistent() (frugalzero.chess.native builds them from
// boards python-chess found valid), and play()/History.push() take only legal moves.
// Moves cross as raw 16-bit integers (from | to << 6 | promotion << 12), lists of them as
// NumPy uint16 arrays in python-chess's order.
#include <cstring>
#include <optional>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "chess/planes.h"
#include "chess/position.h"
#include "python/arrays.h"

namespace nb = nanobind;
using namespace nb::literals;
using fz::History;
using fz::Move;
using fz::Position;

namespace {

using fz::py::Array;
using fz::py::ending_name;
using fz::py::to_numpy;

Array<uint16_t> moves_array(const Move* moves, int n) {
    static_assert(sizeof(Move) == sizeof(uint16_t));
    return to_numpy(reinterpret_cast<const uint16_t*>(moves), size_t(n));
}

// ``raw`` as a legal move of ``p``, or a ValueError.
Move legal_move(const Position& p, int64_t raw) {
    Move moves[fz::MAX_MOVES];
    const int n = p.legal_moves(moves);
    for (int i = 0; i < n; ++i)
        if (moves[i].raw == raw) return moves[i];
    throw nb::value_error(("not a legal move: " + std::to_string(raw) + " in " + p.fen()).c_str());
}

nb::bytes frame_bytes(const Position& p, int repetitions) {
    uint64_t frame[fz::FRAME_WORDS];
    p.frame(frame, repetitions);
    return nb::bytes(frame, sizeof(frame));  // little-endian words, as struct "<13Q" packs them
}

// The benchmark's and the tests' loops over many positions, with no Python per position.
struct PositionBatch {
    std::vector<Position> positions;

    // bench movegen's unit of work: list the legal moves, then play each on a copy; returns
    // the moves played and the XOR of the keys reached (which keeps the work from being elided)
    std::pair<uint64_t, uint64_t> list_and_play() const {
        uint64_t made = 0, keys = 0;
        Move moves[fz::MAX_MOVES];
        for (const Position& p : positions) {
            const int n = p.legal_moves(moves);
            for (int i = 0; i < n; ++i) {
                Position next = p;
                next.play(moves[i]);
                keys ^= next.key;
            }
            made += uint64_t(n);
        }
        return {made, keys};
    }

    uint64_t perft(int depth) const {
        uint64_t nodes = 0;
        for (const Position& p : positions) nodes += fz::perft(p, depth);
        return nodes;
    }
};

}  // namespace

void bind_chess(nb::module_& m) {
    m.attr("MAX_MOVES") = fz::MAX_MOVES;
    m.attr("MAX_CLOCK") = fz::MAX_CLOCK;
    m.attr("NUM_MOVES") = fz::NUM_MOVES;
    m.attr("MOVE_COUNT_SCALE") = fz::MOVE_COUNT_SCALE;  // the planes' (encoding.ENCODING_SPEC)
    m.attr("NO_PROGRESS_SCALE") = fz::NO_PROGRESS_SCALE;

    nb::class_<Position>(m, "Position",
                         "A chess position of the native core (standard chess), built from "
                         "python-chess's fields; see frugalzero.chess.native")
        .def(
            "__init__",
            [](Position* self, uint64_t pawns, uint64_t knights, uint64_t bishops, uint64_t rooks,
               uint64_t queens, uint64_t kings, uint64_t white, uint64_t black, bool turn,
               uint64_t castling, int ep_square, int64_t halfmove_clock,
               int64_t fullmove_number) {
                const fz::Bitboard by_type[6] = {pawns, knights, bishops, rooks, queens, kings};
                Position p;
                std::string error;
                if (!Position::from_parts_checked(by_type, white, black, turn ? fz::WHITE : fz::BLACK,
                                                  castling, ep_square, halfmove_clock,
                                                  fullmove_number, p, &error))
                    throw nb::value_error(("inconsistent position: " + error).c_str());
                new (self) Position(p);
            },
            "pawns"_a, "knights"_a, "bishops"_a, "rooks"_a, "queens"_a, "kings"_a, "white"_a,
            "black"_a, "turn"_a, "castling"_a, "ep_square"_a, "halfmove_clock"_a,
            "fullmove_number"_a,
            "From python-chess's bitboards, turn (True = White), castling rights (rook squares), "
            "ep_square (-1 for none) and clocks; ValueError unless consistent")
        .def_static(
            "from_fen",
            [](const std::string& fen) {
                Position p;
                std::string error;
                if (!Position::from_fen(fen, p, &error))
                    throw nb::value_error(("bad FEN: " + error).c_str());
                return p;
            },
            "fen"_a)
        .def_static("start", &Position::start)
        .def("copy", [](const Position& p) { return p; })
        .def("__copy__", [](const Position& p) { return p; })
        .def("fen", &Position::fen)
        .def("__repr__", [](const Position& p) { return "Position('" + p.fen() + "')"; })
        .def_prop_ro("key", [](const Position& p) { return p.key; })
        .def_prop_ro("turn", [](const Position& p) { return p.turn == fz::WHITE; })
        .def_prop_ro("castling", [](const Position& p) { return p.castling; })
        .def_prop_ro("ep_square",
                     [](const Position& p) -> std::optional<int> {
                         if (p.ep_square < 0) return std::nullopt;
                         return p.ep_square;
                     })
        .def_prop_ro("halfmove_clock", [](const Position& p) { return p.halfmove_clock; })
        .def_prop_ro("fullmove_number", [](const Position& p) { return p.fullmove_number; })
        .def("legal_moves",
             [](const Position& p) {
                 Move moves[fz::MAX_MOVES];
                 return moves_array(moves, p.legal_moves(moves));
             },
             "raw moves (uint16) in python-chess's generate_legal_moves order")
        .def("count_legal", &Position::count_legal)
        .def("policy_indices",
             [](const Position& p) {
                 Move moves[fz::MAX_MOVES];
                 int64_t indices[fz::MAX_MOVES];
                 const int n = p.legal_moves(moves);
                 for (int i = 0; i < n; ++i) indices[i] = fz::policy_index(moves[i], p.turn);
                 return to_numpy(indices, size_t(n));
             },
             "the legal moves' policy indices (int64), in the same order")
        .def("frame", &frame_bytes, "repetitions"_a = 0,
             "the 104-byte frame (chess.encoding.board_frame)")
        .def("meta",
             [](const Position& p) {
                 int64_t v[fz::META_FIELDS];
                 p.meta(v);
                 return std::make_tuple(v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
             },
             "the 7 meta integers (chess.encoding.board_meta)")
        .def(
            "status",
            [](const Position& p, int repetitions, int draw_repetitions, bool fifty_move_draw) {
                Move moves[fz::MAX_MOVES];
                const fz::Status s =
                    fz::leaf_status(p, repetitions, draw_repetitions, fifty_move_draw, moves);
                return std::make_tuple(ending_name(s.ending), s.value, moves_array(moves, s.count));
            },
            "repetitions"_a, "draw_repetitions"_a = 3, "fifty_move_draw"_a = true,
            "chess.rules.leaf_status: (ending or None, value for the side to move, moves)")
        .def("in_check", &Position::in_check)
        .def("insufficient_material", &Position::insufficient_material)
        .def("has_legal_en_passant", &Position::has_legal_en_passant)
        .def("piece_type_at",
             [](const Position& p, int square) {
                 if (square < 0 || square > 63) throw nb::index_error("square out of range");
                 return p.piece_type_at(square);
             })
        .def("play", [](Position& p, int64_t raw) { p.play(legal_move(p, raw)); }, "move"_a,
             "play a legal raw move (ValueError otherwise)")
        .def("after", [](const Position& p, int64_t raw) { return p.after(legal_move(p, raw)); },
             "move"_a, "a copy with the legal raw move played")
        .def("perft", [](const Position& p, int depth) { return fz::perft(p, depth); }, "depth"_a,
             nb::call_guard<nb::gil_scoped_release>());

    m.def(
        "policy_index",
        [](int64_t raw, bool turn) {
            if (raw < 0 || raw > 0xFFFF) throw nb::value_error("a raw move is 16 bits");
            return fz::policy_index(Move(uint16_t(raw)), turn ? fz::WHITE : fz::BLACK);
        },
        "move"_a, "turn"_a, "chess.moves.move_to_index of a raw move (-1: none)");

    m.def(
        "encode_planes",
        [](nb::ndarray<const uint64_t, nb::ndim<3>, nb::c_contig, nb::device::cpu> frames,
           nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> meta) {
            const size_t n = frames.shape(0);
            if (frames.shape(1) != size_t(fz::HISTORY) || frames.shape(2) != size_t(fz::FRAME_WORDS) ||
                meta.shape(0) != n || meta.shape(1) != size_t(fz::META_FIELDS))
                throw nb::value_error("frames must be (N, 8, 13) and meta (N, 7)");
            const size_t size = n * 64 * size_t(fz::NUM_PLANES);
            float* planes = new float[size ? size : 1];
            nb::capsule owner(planes, [](void* p) noexcept { delete[] static_cast<float*>(p); });
            {
                nb::gil_scoped_release unlocked;
                fz::encode_planes(frames.data(), meta.data(), n, planes);
            }
            return Array<float>(planes, {n, 64, size_t(fz::NUM_PLANES)}, owner);
        },
        "frames"_a, "meta"_a,
        "chess.encoding.encode's planes, channels last: (N, 64, 119) float32 from frames "
        "(N, 8, 13) uint64 and meta (N, 7) int64");

    nb::class_<History>(m, "History",
                        "The positions of one game with repetition counts "
                        "(chess.history.GameHistory)")
        .def(nb::init<const Position&>(), "root"_a)
        .def("copy", [](const History& h) { return h; })
        .def("__copy__", [](const History& h) { return h; })
        .def("push", [](History& h, int64_t raw) { h.push(legal_move(h.current(), raw)); },
             "move"_a)
        .def("pop",
             [](History& h) {
                 if (!h.pop()) throw nb::index_error("pop from a history at its root");
             })
        .def_prop_ro("current", [](const History& h) { return h.current(); })
        .def("__len__", &History::size)
        .def_prop_ro("repetitions", &History::repetitions)
        .def("count", &History::count, "key"_a)
        .def(
            "frames",
            [](const History& h, int n) {
                if (n < 0 || n > 4096) throw nb::value_error("n must be in 0..4096");
                std::vector<uint64_t> words(size_t(n) * fz::FRAME_WORDS);
                h.frames(words.data(), n);
                return nb::bytes(words.data(), words.size() * sizeof(uint64_t));
            },
            "n"_a = fz::HISTORY, "the last n frames, newest first, zero frames past the start");

    nb::class_<PositionBatch>(m, "PositionBatch", "many positions, looped over in C++")
        .def("__init__",
             [](PositionBatch* self, const std::vector<Position>& positions) {
                 new (self) PositionBatch{positions};
             })
        .def("__len__", [](const PositionBatch& b) { return b.positions.size(); })
        .def("list_and_play", &PositionBatch::list_and_play,
             nb::call_guard<nb::gil_scoped_release>(),
             "bench movegen's work: list each position's legal moves and play each on a copy; "
             "(moves played, XOR of the keys reached)")
        .def("perft", &PositionBatch::perft, "depth"_a, nb::call_guard<nb::gil_scoped_release>());
}
