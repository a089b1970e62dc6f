// Fuzz passes of the search core (native/search) for the sanitizer build: random trees from the
// corpus positions (random settings: PUCT, contempt, Gumbel, collisions, restricted roots,
// noise), driven by random batches of evaluations (random logits, extreme and non-finite
// ones included, random values), with random advances, releases and reads of the results, and
// the evaluation cache under random capacities; and many trees at once through search/many.h,
// as the driver runs them (one batch gathered from all, the network's outputs applied to all).
// The Python tests hold the tree to its reference move for move; these hold it to its own
// invariants while AddressSanitizer and UBSan watch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "registry.h"
#include "search/batch.h"
#include "search/many.h"
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

// A tree on a corpus position a few random plies into a game, with random settings (and a
// memory limit a third of the time); none when the line is no position.
std::unique_ptr<Tree> random_tree(test::Context& ctx) {
    const std::string& line = ctx.corpus[size_t(ctx.below(int(ctx.corpus.size())))];
    Position position;
    if (!Position::from_fen(line.substr(0, line.find('\t')), position)) return nullptr;
    History history(position);
    Move moves[MAX_MOVES];
    for (int ply = ctx.below(6); ply > 0; --ply) {  // a game before the root
        const int n = history.current().legal_moves(moves);
        if (n == 0) break;
        history.push(moves[ctx.below(n)]);
    }
    auto tree = std::make_unique<Tree>(history, random_params(ctx), ctx.next());
    if (ctx.below(3) == 0) tree->set_memory_limit(size_t(20000 + ctx.below(400000)));
    return tree;
}

// A search of up to ``budget`` simulations, a quarter of the time restricted to some of
// ``root_moves``, half the time with noise (any positive draws will do for the tree).
void random_start(test::Context& ctx, Tree& tree, const std::vector<uint16_t>& root_moves, int budget) {
    std::vector<uint16_t> only;
    if (!root_moves.empty() && ctx.below(4) == 0)
        for (uint16_t m : root_moves)
            if (ctx.below(2)) only.push_back(m);
    std::vector<double> noise;
    const int count = tree.root_count();
    if (count > 0 && ctx.below(2)) {
        double total = 0.0;
        for (int i = 0; i < count; ++i) total += (noise.emplace_back(uniform(ctx) + 1e-9));
        if (!tree.params().gumbel)
            for (double& x : noise) x /= total;
    }
    tree.start(double(1 + ctx.below(budget)), only, noise);
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

// A network's outputs for ``batch``'s rows: random logits (a few columns wider than the batch
// now and then), values (NaN now and then) and WDL rows; the view apply_batch reads.
struct Outputs {
    std::vector<float> logits, values, wdl;
    size_t width = 1;
    bool has_wdl = false;

    RowOutputs view() const {
        RowOutputs out;
        const size_t rows = values.size();
        out.logits = logits.data();
        out.logit_rows = rows;
        out.width = width;
        out.values = values.data();
        out.value_rows = rows;
        if (has_wdl) {
            out.wdl = wdl.data();
            out.wdl_rows = rows;
            out.wdl_columns = 3;
        }
        return out;
    }
};

Outputs random_outputs(test::Context& ctx, const LeafBatch& batch) {
    Outputs out;
    const size_t rows = size_t(batch.rows());
    out.width = size_t(std::max(1, batch.width() + ctx.below(3)));
    out.logits.resize(rows * out.width);
    for (float& x : out.logits) x = random_logit(ctx);
    for (size_t r = 0; r < rows; ++r)
        out.values.push_back(ctx.below(50) ? float(2.0 * uniform(ctx) - 1.0)
                                           : std::numeric_limits<float>::quiet_NaN());
    out.has_wdl = ctx.below(2) == 0;
    if (out.has_wdl)
        for (size_t i = 0; i < rows * 3; ++i) out.wdl.push_back(float(uniform(ctx)));
    return out;
}

// apply_batch with outputs that do not fit the batch (or too few trees) must refuse them
// before touching a tree.
void check_refused(test::Context& ctx, std::span<Tree* const> trees, const LeafBatch& batch,
                   const Outputs& good, EvalCache* cache) {
    RowOutputs bad = good.view();
    std::span<Tree* const> given = trees;
    int last_tree = -1;
    for (int i = 0; i < batch.leaves(); ++i) last_tree = std::max(last_tree, batch.leaf(i).tree);
    switch (ctx.below(4)) {
        case 0:
            if (batch.rows() > 0 && batch.width() > 0) {
                bad.width = size_t(batch.width() - 1);
                break;
            }
            [[fallthrough]];
        case 1:
            bad.wdl = good.values.data();  // any pointer: the shape is what is wrong
            bad.wdl_rows = size_t(batch.rows());
            bad.wdl_columns = 2;
            break;
        case 2:
            if (last_tree >= 0) {
                given = trees.first(size_t(last_tree));
                break;
            }
            [[fallthrough]];
        default: bad.value_rows += 1;
    }
    std::vector<int> in_flight;
    for (Tree* t : trees) in_flight.push_back(t->in_flight());
    bool threw = false;
    try {
        apply_batch(given, batch, bad, cache);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
    for (size_t i = 0; i < trees.size(); ++i) CHECK(trees[i]->in_flight() == in_flight[i]);
}

// finished_trees names exactly the trees whose search is complete, in order.
void check_finished(test::Context& ctx, std::span<Tree* const> trees, const std::vector<int>& done) {
    size_t at = 0;
    for (size_t i = 0; i < trees.size(); ++i) {
        const bool listed = at < done.size() && done[at] == int(i);
        CHECK(listed == trees[i]->finished());
        if (listed) ++at;
    }
    CHECK(at == done.size());
}

// The driver's loop over many trees: gather every tree's leaves into one batch, hand the batch
// random outputs (now and then wrong ones first, which must be refused), until all are done.
void search_together(test::Context& ctx, std::span<Tree* const> trees, LeafBatch& batch,
                     EvalCache& cache) {
    for (int round = 0; round < 400; ++round) {
        const std::vector<int> done = finished_trees(trees);
        check_finished(ctx, trees, done);
        if (done.size() == trees.size()) return;
        batch.clear();
        EvalCache* used = ctx.below(2) ? &cache : nullptr;
        const int gathered = gather_trees(trees, batch, used, ctx.below(8));
        CHECK(gathered == batch.leaves());
        std::vector<int> named(trees.size(), 0);  // leaves naming each tree
        for (int i = 0; i < batch.leaves(); ++i) named[size_t(batch.leaf(i).tree)] += 1;
        for (size_t i = 0; i < trees.size(); ++i) CHECK(trees[i]->in_flight() == named[i]);
        const Outputs outputs = random_outputs(ctx, batch);
        if (ctx.below(8) == 0) check_refused(ctx, trees, batch, outputs, used);
        apply_batch(trees, batch, outputs.view(), used);
        for (Tree* t : trees) CHECK(t->in_flight() == 0);
        if (ctx.below(10) == 0) cache.resize(size_t(ctx.below(3000)));
    }
}

// history_rows: one leaf per history, naming it and no node, with its legal moves.
void check_history_rows(test::Context& ctx, std::span<Tree* const> trees, EvalCache& cache) {
    std::vector<const History*> histories;
    for (Tree* t : trees) histories.push_back(&t->history());
    LeafBatch batch;
    history_rows(histories, batch, ctx.below(2) ? &cache : nullptr);
    CHECK(batch.leaves() == int(histories.size()));
    Move moves[MAX_MOVES];
    for (int i = 0; i < batch.leaves(); ++i) {
        const Leaf& leaf = batch.leaf(i);
        CHECK(leaf.tree == i && leaf.node == -1);
        CHECK(leaf.count == histories[size_t(i)]->current().legal_moves(moves));
    }
}

}  // namespace

FZ_TEST(fuzz_search_trees) {
    if (ctx.corpus.empty()) return;
    const int trees = 150 * ctx.scale;
    EvalCache cache(size_t(1 + ctx.below(4000)));
    LeafBatch batch;
    for (int t = 0; t < trees; ++t) {
        std::unique_ptr<Tree> made = random_tree(ctx);
        if (!made) continue;
        Tree& tree = *made;
        for (int move = 0; move < 4; ++move) {
            const std::vector<uint16_t> root_moves = tree.root_moves();
            random_start(ctx, tree, root_moves, 300);
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
            // the root KL: finite and never negative under self-play's floor or a large one
            const double kl = tree.target_kl(ctx.below(2) ? 1e-9 : 0.5);
            CHECK(std::isfinite(kl) && kl >= 0.0);
            tree.leader();
            tree.choice_visits();
            const int best = tree.best_slot();
            CHECK(result.best_move.has_value() == (best >= 0));
            if (best >= 0) CHECK(*result.best_move == result.moves[size_t(best)]);
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

// Groups of trees searched together through search/many.h, as the driver does: one batch
// gathered from all of them, one set of outputs applied to all, then each advances or is
// released; every tree consistent after each search.
FZ_TEST(fuzz_many_trees) {
    if (ctx.corpus.empty()) return;
    EvalCache cache(size_t(1 + ctx.below(4000)));
    LeafBatch batch;
    for (int group = 0; group < 12 * ctx.scale; ++group) {
        std::vector<std::unique_ptr<Tree>> owned;
        const int count = 1 + ctx.below(24);
        while (int(owned.size()) < count)
            if (std::unique_ptr<Tree> tree = random_tree(ctx)) owned.push_back(std::move(tree));
        std::vector<Tree*> trees;
        for (const auto& tree : owned) trees.push_back(tree.get());
        for (int move = 0; move < 3; ++move) {
            for (Tree* t : trees) random_start(ctx, *t, t->root_moves(), 200);
            search_together(ctx, trees, batch, cache);
            check_history_rows(ctx, trees, cache);
            for (Tree* t : trees) {
                check_tree(ctx, *t);
                const int best = t->best_slot();
                if (best < 0 || ctx.below(6) == 0) {
                    t->release();
                    continue;
                }
                t->advance(Move(t->root_moves()[size_t(best)]));
            }
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
