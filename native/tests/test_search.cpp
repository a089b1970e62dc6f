// Fuzz passes of the search core (native/search) for the sanitizer build: random trees from the
// corpus positions (random settings: PUCT, contempt, Gumbel, collisions, restricted roots,
// noise), driven by random batches of evaluations (random logits, extreme and non-finite
// ones included, random values), with random advances, releases and reads of the results, and
// the evaluation cache under random capacities. The Python tests hold the tree to its reference
// move for move; these hold it to its own invariants while AddressSanitizer and UBSan watch.
#include <cmath>
#include <limits>
#include <vector>

#include "registry.h"
#include "search/batch.h"
#include "search/tree.h"

using namespace fz;

namespace {

double uniform(test::Context& ctx) { return double(ctx.next() >> 11) * (1.0 / 9007199254740992.0); }

SearchParams random_params(test::Context& ctx) {
    SearchParams p;
    p.c_init = 0.5 + 3.0 * uniform(ctx);
    p.fpu_absolute = ctx.below(3) == 0;
    p.fpu_value = p.fpu_absolute ? 2.0 * uniform(ctx) - 1.0 : uniform(ctx);
    p.policy_temperature = 0.5 + 2.0 * uniform(ctx);
    p.root_noise = ctx.below(2) == 0;
    const int kind = ctx.below(4);
    p.nscl = kind == 1 ? double(ctx.below(20)) : std::numeric_limits<double>::infinity();
    p.gumbel = kind == 2;
    p.gumbel_m = 1 + ctx.below(16);
    p.gumbel_rescale = ctx.below(2) == 0;
    p.virtual_loss = 3.0 * uniform(ctx);
    p.leaves_per_gather = 1 + ctx.below(16);
    p.collisions = ctx.below(16);
    p.draw_repetitions = 2 + ctx.below(2);
    p.fifty_move_draw = ctx.below(4) != 0;
    p.solver = ctx.below(4) != 0;
    p.reuse_tree = ctx.below(4) != 0;
    p.default_simulations = 1 + ctx.below(64);
    return p;
}

float random_logit(test::Context& ctx) {
    switch (ctx.below(40)) {
        case 0: return std::numeric_limits<float>::infinity();
        case 1: return -std::numeric_limits<float>::infinity();
        case 2: return std::numeric_limits<float>::quiet_NaN();
        case 3: return 1e30f;
        default: return float(8.0 * uniform(ctx) - 4.0);
    }
}

// The statistics every expanded node below the root keeps consistent once nothing is in flight.
void check_tree(test::Context& ctx, const Tree& tree) {
    std::vector<int> stack = {tree.root()};
    CHECK(tree.node(tree.root()).parent == -1);
    while (!stack.empty()) {
        const int id = stack.back();
        stack.pop_back();
        const Node& node = tree.node(id);
        if (node.state != EXPANDED) continue;
        long visits = 0;
        for (int s = 0; s < node.count; ++s) {
            const Edge& e = tree.edge(id, s);
            visits += e.N;
            CHECK(std::isfinite(e.W) && std::isfinite(e.prior) && e.prior >= 0.0);
            const int child = e.child;
            if (child < 0) continue;
            CHECK(tree.node(child).parent == id && tree.node(child).slot == s);
            stack.push_back(child);
        }
        // its own evaluation and one per walk through it; a proven node also counts the walks
        // that stopped at it (their value is its proof)
        if (node.proven) CHECK_MSG(node.n >= 1 + visits, "node " + std::to_string(id));
        else CHECK_MSG(node.n == 1 + visits, "node " + std::to_string(id));
        CHECK(std::isfinite(node.w) && std::isfinite(node.value));
    }
}

}  // namespace

FZ_TEST(fuzz_search_trees) {
    if (ctx.corpus.empty()) return;
    const int trees = 150 * ctx.scale;
    EvalCache cache(size_t(1 + ctx.below(4000)));
    LeafBatch batch;
    for (int t = 0; t < trees; ++t) {
        const std::string& line = ctx.corpus[size_t(ctx.below(int(ctx.corpus.size())))];
        Position position;
        if (!Position::from_fen(line.substr(0, line.find('\t')), position)) continue;
        History history(position);
        Move moves[MAX_MOVES];
        for (int ply = ctx.below(6); ply > 0; --ply) {  // a game before the root
            const int n = history.current().legal_moves(moves);
            if (n == 0) break;
            history.push(moves[ctx.below(n)]);
        }
        Tree tree(history, random_params(ctx), ctx.next());
        if (ctx.below(3) == 0) tree.set_memory_limit(size_t(20000 + ctx.below(400000)));
        const SearchParams& params = tree.params();
        for (int move = 0; move < 4; ++move) {
            std::vector<uint16_t> only;
            const std::vector<uint16_t> root_moves = tree.root_moves();
            if (!root_moves.empty() && ctx.below(4) == 0)
                for (uint16_t m : root_moves)
                    if (ctx.below(2)) only.push_back(m);
            std::vector<double> noise;
            const int count = tree.root_count();
            if (count > 0 && ctx.below(2)) {  // any positive draws will do for the tree
                double total = 0.0;
                for (int i = 0; i < count; ++i) total += (noise.emplace_back(uniform(ctx) + 1e-9));
                if (!params.gumbel)
                    for (double& x : noise) x /= total;
            }
            tree.start(double(1 + ctx.below(300)), only, noise);
            for (int round = 0; round < 400 && !tree.finished(); ++round) {
                batch.clear();
                EvalCache* used = ctx.below(2) ? &cache : nullptr;
                const int gathered = tree.gather(ctx.below(20), batch, 0, used);
                CHECK(gathered == batch.leaves());  // every leaf gathered is in the batch
                const int width = std::max(1, batch.width());
                std::vector<int16_t> indices(size_t(batch.rows()) * size_t(width));
                batch.padded_indices(indices.data(), width);
                std::vector<float> logits(size_t(batch.rows()) * size_t(width));
                for (float& x : logits) x = random_logit(ctx);
                for (int i = 0; i < batch.leaves(); ++i) {
                    const Leaf& leaf = batch.leaf(i);
                    const float value = ctx.below(50) ? float(2.0 * uniform(ctx) - 1.0)
                                                      : std::numeric_limits<float>::quiet_NaN();
                    if (leaf.row >= 0) {
                        const float* row = &logits[size_t(leaf.row) * size_t(width)];
                        if (used) used->put(batch.keys()[size_t(leaf.row)], row, leaf.count, value, nullptr);
                        tree.apply_logits(leaf.node, row, leaf.count, value, 0.25);
                    } else {
                        tree.apply_logits(leaf.node, batch.cached_logits(leaf), leaf.count, leaf.value,
                                          std::numeric_limits<double>::quiet_NaN());
                    }
                }
                CHECK(tree.in_flight() == 0);
                if (ctx.below(10) == 0) cache.resize(size_t(ctx.below(3000)));
            }
            check_tree(ctx, tree);
            if (tree.memory_limit()) CHECK(tree.memory_bytes() <= tree.memory_limit());
            const ResultData result = tree.result(1 + ctx.below(8));
            CHECK(result.moves.size() == result.visits.size() && result.q.size() == result.moves.size());
            float total = 0.0f;
            for (float p : result.target_probs) total += p;
            CHECK(result.target_probs.empty() || std::fabs(total - 1.0f) < 1e-3f);
            tree.leader();
            tree.choice_visits();
            const int best = tree.best_slot();
            if (best < 0 || ctx.below(8) == 0) break;
            if (ctx.below(6) == 0) {
                tree.release();
                continue;
            }
            tree.advance(Move(root_moves.empty() ? result.moves[size_t(best)] : root_moves[size_t(best)]));
            const Status status = tree.root_status(3, true);
            if (status.ending != Ending::NONE) break;
        }
    }
}

FZ_TEST(search_rejects_misuse) {
    Position position = Position::start();
    History history(position);
    Tree tree(history, SearchParams(), 1);
    LeafBatch batch;
    tree.start(8, {}, {});
    CHECK(tree.gather(0, batch, 0, nullptr) == 1);  // the root
    bool threw = false;
    try {
        tree.advance(Move(12, 28));  // e2e4 while the root is being evaluated
    } catch (const std::runtime_error&) {
        threw = true;
    }
    CHECK(threw);
    threw = false;
    const float logits[3] = {0.0f, 1.0f, 2.0f};
    try {
        tree.apply_logits(batch.leaf(0).node, logits, 3, 0.0, 0.0);  // 20 moves, not 3
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
}

// A search with no node limit under a memory limit ends by itself, inside it, and searches on
// after the game moves (the kept subtree copied, or the tree started afresh).
FZ_TEST(search_stops_at_its_memory_limit) {
    History history(Position::start());
    Tree tree(history, SearchParams(), 1);
    const size_t limit = 256 * 1024;
    tree.set_memory_limit(limit);
    LeafBatch batch;
    std::vector<float> logits(size_t(MAX_MOVES), 0.0f);
    for (int move = 0; move < 3; ++move) {
        tree.start(0, {}, {});  // until stopped
        int rounds = 0;
        for (; rounds < 100000 && !tree.finished(); ++rounds) {
            batch.clear();
            tree.gather(8, batch, 0, nullptr);
            for (int i = 0; i < batch.leaves(); ++i)
                tree.apply_logits(batch.leaf(i).node, logits.data(), batch.leaf(i).count, 0.0, 0.25);
        }
        CHECK(tree.finished() && tree.memory_full() && rounds > 10);
        CHECK(tree.memory_bytes() <= limit);
        tree.advance(Move(uint16_t(tree.result(1).moves[size_t(tree.best_slot())])));
        CHECK(tree.memory_bytes() <= limit);
    }
}
