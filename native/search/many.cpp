// The driver's batch work over many trees (many.h): gather, apply, and what surrounds them.
#include "search/many.h"

#include <limits>
#include <stdexcept>

namespace fz {

std::vector<int> finished_trees(std::span<Tree* const> trees) {
    std::vector<int> done;
    for (size_t i = 0; i < trees.size(); ++i)
        if (trees[i]->finished()) done.push_back(int(i));
    return done;
}

void history_rows(std::span<const History* const> histories, LeafBatch& batch, EvalCache* cache) {
    for (size_t i = 0; i < histories.size(); ++i) batch.add_history(int(i), -1, *histories[i], cache);
}

int gather_trees(std::span<Tree* const> trees, LeafBatch& batch, EvalCache* cache, int limit) {
    // WALKERS trees walked at once, a stage each in turn (Tree::gather_begin); the trees
    // after them fetched ahead in three stages a tree apart (Tree::prefetch_self)
    constexpr size_t WALKERS = 6;
    const size_t n = trees.size();
    int total = 0;
    size_t next = 0;  // the next tree to begin
    auto fetch_ahead = [&](size_t i) {
        if (i + 2 < n) trees[i + 2]->prefetch_self();
        if (i + 1 < n) trees[i + 1]->prefetch_root_node();
        if (i < n) trees[i]->prefetch_root();
    };
    for (size_t i = 0; i < n && i < 2; ++i) trees[i]->prefetch_self();
    if (n) trees[0]->prefetch_root_node();
    auto begin_next = [&]() -> Tree* {  // the next tree with a walk to take, or none
        while (next < n) {
            Tree* tree = trees[next];
            const int index = int(next);
            next += 1;
            fetch_ahead(next);
            if (tree->gather_begin(limit, batch, index, cache)) return tree;
            total += tree->gather_end();
        }
        return nullptr;
    };
    Tree* walkers[WALKERS];
    size_t live = 0;
    try {
        while (live < WALKERS) {
            Tree* tree = begin_next();
            if (!tree) break;
            walkers[live++] = tree;
        }
        while (live) {
            for (size_t w = 0; w < live;) {
                if (walkers[w]->gather_step()) {
                    ++w;
                    continue;
                }
                total += walkers[w]->gather_end();
                Tree* tree = begin_next();
                if (tree) {
                    walkers[w++] = tree;
                } else {
                    walkers[w] = walkers[--live];
                }
            }
        }
    } catch (...) {  // the walkers' trees left consistent: collisions undone, leaves counted
        for (size_t w = 0; w < live; ++w) walkers[w]->gather_end();
        throw;
    }
    return total;
}

namespace {

void check_outputs(std::span<Tree* const> trees, const LeafBatch& batch, const RowOutputs& out) {
    const size_t rows = size_t(batch.rows());
    if (out.logit_rows != rows || out.value_rows != rows || (out.wdl && out.wdl_rows != rows))
        throw std::invalid_argument("one output row per network row");
    if (rows && out.width < size_t(batch.width()))
        throw std::invalid_argument("logits narrower than the batch");
    if (out.wdl && out.wdl_columns != 3) throw std::invalid_argument("wdl must have 3 columns");
    for (int i = 0; i < batch.leaves(); ++i)
        if (batch.leaf(i).tree < 0 || size_t(batch.leaf(i).tree) >= trees.size())
            throw std::invalid_argument("the batch was gathered from other trees");
}

}  // namespace

void apply_batch(std::span<Tree* const> trees, const LeafBatch& batch, const RowOutputs& outputs,
                 EvalCache* cache) {
    check_outputs(trees, batch, outputs);
    const size_t width = outputs.width;
    const float* L = outputs.logits;
    const float* V = outputs.values;
    const float* D = outputs.wdl;
    const int leaves = batch.leaves();
    // the way up from the leaves fetched ahead in three stages a leaf apart: the tree, the
    // leaf's node, then its parent and edges (Tree::prefetch_leaf) with its cache set
    for (int i = 0; i < leaves && i < 3; ++i) trees[size_t(batch.leaf(i).tree)]->prefetch_self();
    for (int i = 0; i < leaves && i < 2; ++i) {
        const Leaf& next = batch.leaf(i);
        trees[size_t(next.tree)]->prefetch_node(next.node);
    }
    if (leaves) trees[size_t(batch.leaf(0).tree)]->prefetch_leaf(batch.leaf(0).node);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int i = 0; i < leaves; ++i) {
        const Leaf& leaf = batch.leaf(i);
        if (i + 3 < leaves) trees[size_t(batch.leaf(i + 3).tree)]->prefetch_self();
        if (i + 2 < leaves) {
            const Leaf& next = batch.leaf(i + 2);
            trees[size_t(next.tree)]->prefetch_node(next.node);
        }
        if (i + 1 < leaves) {
            const Leaf& next = batch.leaf(i + 1);
            trees[size_t(next.tree)]->prefetch_leaf(next.node);
            if (cache && next.row >= 0) cache->prefetch(batch.keys()[size_t(next.row)]);
        }
        Tree& tree = *trees[size_t(leaf.tree)];
        if (leaf.row >= 0) {
            const float* row = L + size_t(leaf.row) * width;
            const float* w = D ? D + size_t(leaf.row) * 3 : nullptr;
            if (cache) cache->put(batch.keys()[size_t(leaf.row)], row, leaf.count, V[leaf.row], w);
            tree.apply_logits(leaf.node, row, leaf.count, V[leaf.row], w ? double(w[1]) : nan);
        } else {
            tree.apply_logits(leaf.node, batch.cached_logits(leaf), leaf.count, leaf.value,
                              leaf.has_wdl ? double(leaf.wdl[1]) : nan);
        }
    }
}

}  // namespace fz
