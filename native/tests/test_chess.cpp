// Tests and fuzz passes of the chess core (native/chess). The Python tests hold the core to
// python-chess move for move; these run the same code under AddressSanitizer and UBSan, on
// the corpus python-chess wrote (--corpus: "FEN<TAB>legal moves in python-chess's order"),
// random playouts from it, random piece placements and garbage FENs, and check the core's own
// invariants on the way (incremental key = key from scratch, FEN round trips, counts, History)
// and the input planes built from random frames.
#include <algorithm>
#include <set>

#include "chess/bitboard.h"
#include "chess/planes.h"
#include "registry.h"

using namespace fz;

namespace {

std::string join_uci(const Move* moves, int n) {
    std::string text;
    for (int i = 0; i < n; ++i) {
        if (i) text += ' ';
        text += moves[i].uci();
    }
    return text;
}

// The corpus line's FEN and (after a tab) python-chess's legal moves.
std::pair<std::string, std::string> split_line(const std::string& line) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) return {line, std::string()};
    return {line.substr(0, tab), line.substr(tab + 1)};
}

// Everything one position must satisfy, whatever it is.
void check_position(test::Context& ctx, const Position& p) {
    std::string error;
    CHECK_MSG(p.consistent(&error), error + " in " + p.fen());
    Move moves[MAX_MOVES];
    const int n = p.legal_moves(moves);
    CHECK_MSG(n >= 0 && n <= MAX_MOVES, p.fen());
    CHECK_MSG(p.count_legal() == n, p.fen());
    std::set<int> indices;
    for (int i = 0; i < n; ++i) {
        const int index = policy_index(moves[i], p.turn);
        CHECK_MSG(index >= 0 && index < NUM_MOVES, moves[i].uci() + " in " + p.fen());
        indices.insert(index);
    }
    CHECK_MSG(int(indices.size()) == n, "policy indices not distinct in " + p.fen());
    Position again;
    CHECK_MSG(Position::from_fen(p.fen(), again, &error), error + " reading back " + p.fen());
    CHECK_MSG(again.fen() == p.fen() && again.key == p.key, p.fen());
    uint64_t frame[FRAME_WORDS];
    p.frame(frame, 7);
    Bitboard all = 0;
    for (int i = 0; i < 12; ++i) all |= frame[i];
    CHECK(all == p.occupied && frame[12] == 2);
    int64_t meta[META_FIELDS];
    p.meta(meta);
    CHECK(meta[0] == (p.turn == WHITE) && meta[5] == p.halfmove_clock && meta[6] == p.fullmove_number);
    Move status_moves[MAX_MOVES];
    const Status status = leaf_status(p, 0, 3, true, status_moves);
    if (status.ending == Ending::NONE) {
        CHECK(status.count == n && std::equal(moves, moves + n, status_moves));
    } else {
        CHECK(status.count == 0);
        CHECK((status.value == -1.0) == (status.ending == Ending::CHECKMATE));
    }
    CHECK(leaf_status(p, 2, 3, true, status_moves).ending == Ending::REPETITION);
}

// Plays up to ``plies`` random moves from ``root`` through a History, checking every position
// and the History's counts against a recount, then pops back to the root.
void random_game(test::Context& ctx, const Position& root, int plies) {
    History history(root);
    std::vector<uint64_t> keys = {root.key};
    for (int ply = 0; ply < plies; ++ply) {
        const Position& p = history.current();
        check_position(ctx, p);
        Move moves[MAX_MOVES];
        const int n = p.legal_moves(moves);
        if (n == 0) break;
        history.push(moves[ctx.below(n)]);
        keys.push_back(history.current().key);
        const int seen = int(std::count(keys.begin(), keys.end(), keys.back()));
        CHECK(history.count(keys.back()) == seen);
        CHECK(history.repetitions() == std::min(seen - 1, 2));
        CHECK(history.size() == int(keys.size()));
    }
    uint64_t frames[HISTORY * FRAME_WORDS];
    history.frames(frames, HISTORY);
    for (int i = 0; i < HISTORY; ++i) {
        const uint64_t* frame = frames + i * FRAME_WORDS;
        if (i < history.size()) {
            const Position& p = history.at(history.size() - 1 - i);
            CHECK(frame[0] == p.pieces[WHITE][0] && frame[11] == p.pieces[BLACK][5]);
            CHECK(int(frame[12]) == history.repetitions_at(history.size() - 1 - i));
        } else {
            CHECK(std::all_of(frame, frame + FRAME_WORDS, [](uint64_t w) { return w == 0; }));
        }
    }
    while (history.pop()) keys.pop_back();
    CHECK(history.size() == 1 && keys.size() == 1);
    CHECK(history.count(root.key) == 1 && history.current().key == root.key);
}

// perft with bulk counting against perft that makes every last move.
uint64_t perft_full(const Position& p, int depth) {
    if (depth == 0) return 1;
    Move moves[MAX_MOVES];
    const int n = p.legal_moves(moves);
    uint64_t nodes = 0;
    for (int i = 0; i < n; ++i) nodes += perft_full(p.after(moves[i]), depth - 1);
    return nodes;
}

}  // namespace

FZ_TEST(perft_reference) {
    struct Case {
        const char* fen;
        int depth;
        uint64_t nodes;
    };
    // figures from ../shared/perft/perft.epd (the Python test runs all of its depths)
    const Case cases[] = {
        {"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 4, 197281},
        {"r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3, 97862},
        {"8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 5, 674624},
        {"r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 3, 9467},
        {"rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 3, 62379},
        {"r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 3, 89890},
    };
    for (const Case& c : cases) {
        Position p;
        std::string error;
        CHECK_MSG(Position::from_fen(c.fen, p, &error), error);
        CHECK_MSG(perft(p, c.depth) == c.nodes, c.fen);
        CHECK_MSG(perft_full(p, 2) == perft(p, 2), c.fen);
    }
}

FZ_TEST(start_position) {
    const Position p = Position::start();
    CHECK(p.fen() == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    Move moves[MAX_MOVES];
    const int n = p.legal_moves(moves);
    // python-chess's order: knights g1 then b1 (highest square first), then pawn pushes
    CHECK_MSG(join_uci(moves, n) ==
                  "g1h3 g1f3 b1c3 b1a3 h2h3 g2g3 f2f3 e2e3 d2d3 c2c3 b2b3 a2a3 h2h4 g2g4 "
                  "f2f4 e2e4 d2d4 c2c4 b2b4 a2a4",
              join_uci(moves, n));
    check_position(ctx, p);
}

FZ_TEST(corpus_positions) {
    // every corpus line: a FEN python-chess accepted, read back identically, with python-chess's
    // legal moves in its order
    for (const std::string& line : ctx.corpus) {
        const auto [fen, expected] = split_line(line);
        Position p;
        std::string error;
        const bool ok = Position::from_fen(fen, p, &error);
        CHECK_MSG(ok, error + ": " + fen);
        if (!ok) continue;
        CHECK_MSG(p.fen() == fen, p.fen() + " != " + fen);
        if (!expected.empty() || line.find('\t') != std::string::npos) {
            Move moves[MAX_MOVES];
            const int n = p.legal_moves(moves);
            CHECK_MSG(join_uci(moves, n) == (expected == "-" ? std::string() : expected), fen);
        }
        check_position(ctx, p);
        CHECK_MSG(perft_full(p, 2) == perft(p, 2), fen);
    }
}

FZ_TEST(fuzz_playouts) {
    // random games from the corpus positions (or the start without a corpus)
    std::vector<Position> roots;
    for (const std::string& line : ctx.corpus) {
        Position p;
        if (Position::from_fen(split_line(line).first, p)) roots.push_back(p);
    }
    if (roots.empty()) roots.push_back(Position::start());
    const int games = 20 * ctx.scale;
    for (int g = 0; g < games; ++g) random_game(ctx, roots[ctx.below(int(roots.size()))], 120);
}

FZ_TEST(fuzz_random_placements) {
    // random piece placements through the checked constructor: refused, or a position every
    // function handles (many queens included: more legal moves than any real game has)
    const int tries = 4000 * ctx.scale;
    int accepted = 0;
    for (int i = 0; i < tries; ++i) {
        Bitboard by_type[6] = {}, colours[2] = {};
        const int pieces = 2 + ctx.below(30);
        for (int k = 0; k < pieces; ++k) {
            const int square = ctx.below(64);
            const int type = k < 2 ? KING - 1 : ctx.below(ctx.below(4) == 0 ? 5 : 6);
            const int colour = k < 2 ? k : ctx.below(2);
            if ((colours[0] | colours[1]) & bb(square)) continue;
            by_type[type] |= bb(square);
            colours[colour] |= bb(square);
        }
        const int ep = ctx.below(3) ? -1 : ctx.below(64);
        Position p;
        if (!Position::from_parts_checked(by_type, colours[WHITE], colours[BLACK], ctx.below(2),
                                          ctx.next(), ep, ctx.below(120), 1 + ctx.below(90), p))
            continue;
        ++accepted;
        check_position(ctx, p);
        CHECK_MSG(perft_full(p, 2) == perft(p, 2), p.fen());
        random_game(ctx, p, 12);
    }
    CHECK_MSG(accepted > tries / 50, std::to_string(accepted) + " accepted");
}

FZ_TEST(fuzz_garbage_fens) {
    // from_fen on broken text: false, or (rarely) a position that is whole; never a crash
    std::vector<std::string> seeds;
    for (const std::string& line : ctx.corpus) seeds.push_back(split_line(line).first);
    seeds.push_back("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    const std::string alphabet = "pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh0123456789~\t\xff";
    const int tries = 20000 * ctx.scale;
    for (int i = 0; i < tries; ++i) {
        std::string text = seeds[ctx.below(int(seeds.size()))];
        const int edits = 1 + ctx.below(6);
        for (int e = 0; e < edits; ++e) {
            const int kind = ctx.below(5);
            const int at = ctx.below(int(text.size()) + 1);
            const char c = ctx.below(8) ? alphabet[ctx.below(int(alphabet.size()))]
                                        : char(ctx.below(256));
            if (kind == 0 && at < int(text.size())) text.erase(at, 1);
            else if (kind == 1) text.insert(text.begin() + at, c);
            else if (kind == 2 && at < int(text.size())) text[at] = c;
            else if (kind == 3) text.resize(at);
            else text += std::string(ctx.below(4), c);
        }
        if (ctx.below(50) == 0) {  // pure noise
            text.clear();
            for (int k = ctx.below(120); k > 0; --k) text += char(ctx.below(256));
        }
        Position p;
        std::string error;
        if (Position::from_fen(text, p, &error)) {
            check_position(ctx, p);
        } else {
            CHECK_MSG(!error.empty(), text);
        }
    }
}

FZ_TEST(policy_indices) {
    // every (from, to, promotion) maps into 0..4671 or to -1, and no two moves of a side share
    // an index (a queen promotion shares the plain move's)
    std::vector<int> hits(NUM_MOVES, 0);
    for (int turn = 0; turn < 2; ++turn)
        for (int raw = 0; raw < (1 << 16); ++raw) {
            const int index = policy_index(Move(uint16_t(raw)), Color(turn));
            CHECK(index >= -1 && index < NUM_MOVES);
            if (index >= 0 && turn == WHITE && (raw >> 12) != QUEEN) ++hits[index];
        }
    // moves.py's decode table has 2254 indices that denote a move (the rest run off the board)
    CHECK(std::count(hits.begin(), hits.end(), 1) == 2254);
    CHECK(std::count(hits.begin(), hits.end(), 0) == NUM_MOVES - 2254);
}

FZ_TEST(fuzz_planes) {
    // planes of random words and meta (memory safety under the sanitizers), each set bit of a
    // frame a 1 on its own plane and square (mirrored for Black), the aux planes from meta
    const int batches = 20 * ctx.scale;
    for (int b = 0; b < batches; ++b) {
        const size_t n = size_t(1 + ctx.below(9));
        std::vector<uint64_t> frames(n * HISTORY * FRAME_WORDS);
        std::vector<int64_t> meta(n * META_FIELDS);
        for (uint64_t& w : frames) w = ctx.next() & ctx.next();  // sparse boards
        for (size_t i = 0; i < n; ++i)
            for (int t = 0; t < HISTORY; ++t)
                frames[(i * HISTORY + t) * FRAME_WORDS + 12] = uint64_t(ctx.below(4));
        for (size_t i = 0; i < n; ++i) {
            meta[i * META_FIELDS] = ctx.below(2);
            for (int k = 1; k < 5; ++k) meta[i * META_FIELDS + k] = ctx.below(2);
            meta[i * META_FIELDS + 5] = ctx.below(200);
            meta[i * META_FIELDS + 6] = 1 + ctx.below(500);
        }
        std::vector<float> planes(n * 64 * NUM_PLANES, -1.0f);
        encode_planes(frames.data(), meta.data(), n, planes.data());
        for (size_t i = 0; i < n; ++i) {
            const int64_t* m = &meta[i * META_FIELDS];
            const bool black = m[0] == 0;
            const float* o = &planes[i * 64 * NUM_PLANES];
            for (int t = 0; t < HISTORY; ++t) {
                const uint64_t* words = &frames[(i * HISTORY + t) * FRAME_WORDS];
                for (int p = 0; p < 12; ++p) {
                    const int colour = (p < 6) == black ? 1 : 0;  // frames: White's words first
                    const uint64_t word = words[colour * 6 + p % 6];
                    for (int square = 0; square < 64; ++square) {
                        const int seen = black ? square ^ 56 : square;
                        const float want = (word >> seen) & 1 ? 1.0f : 0.0f;
                        CHECK(o[square * NUM_PLANES + t * PLANES_PER_STEP + p] == want);
                    }
                }
                const int64_t reps = int64_t(words[12]);
                CHECK(o[5 * NUM_PLANES + t * PLANES_PER_STEP + 12] == (reps >= 1 ? 1.0f : 0.0f));
                CHECK(o[63 * NUM_PLANES + t * PLANES_PER_STEP + 13] == (reps >= 2 ? 1.0f : 0.0f));
            }
            const float* aux = o + 17 * NUM_PLANES + HISTORY * PLANES_PER_STEP;
            CHECK(aux[0] == (black ? 1.0f : 0.0f));
            CHECK(aux[1] == float(double(m[6]) / 100.0));
            CHECK(aux[2] == float(black ? m[3] : m[1]));
            CHECK(aux[5] == float(black ? m[2] : m[4]));
            CHECK(aux[6] == float(double(m[5]) / 100.0));
        }
    }
}
