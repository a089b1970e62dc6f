// Many trees sharing one network batch: the driver's per-batch work (frugalzero.search.driver)
// as plain C++ over a list of trees, so the sanitizer build's fuzz passes run it
// (native/tests/test_search.cpp) and the binding only converts arrays. Tree i of the list is
// the ``tree`` every leaf of the batch names.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "search/batch.h"
#include "search/tree.h"

namespace fz {

// The network's answers to a batch's rows, row-major, with their shapes as the caller has
// them (apply_batch checks that they fit the batch).
struct RowOutputs {
    const float* logits = nullptr;  // logit_rows x width: logits of each row's legal moves
    size_t logit_rows = 0, width = 0;
    const float* values = nullptr;  // value_rows
    size_t value_rows = 0;
    const float* wdl = nullptr;  // wdl_rows x wdl_columns; nullptr without a WDL head
    size_t wdl_rows = 0, wdl_columns = 0;
};

// Indices of the trees whose search is complete.
std::vector<int> finished_trees(std::span<Tree* const> trees);

// The current position of every history into ``batch`` (history i's row or cached leaf names
// tree i, node -1): positions outside any tree.
void history_rows(std::span<const History* const> histories, LeafBatch& batch, EvalCache* cache);

// Every tree's leaves into ``batch`` (at most ``limit`` each, 0: its leaves_per_gather),
// several trees walked at once so their memory latencies overlap; returns the leaves gathered.
// On an exception the trees being walked are left consistent (their gathers ended).
int gather_trees(std::span<Tree* const> trees, LeafBatch& batch, EvalCache* cache, int limit);

// Hand every leaf of ``batch`` its evaluation, in gather order: the rows' from ``outputs``
// (stored in ``cache`` too when there is one), the cached leaves' from the batch.
// std::invalid_argument when the outputs do not fit the batch or a leaf names no tree of
// ``trees``, before any tree is touched.
void apply_batch(std::span<Tree* const> trees, const LeafBatch& batch, const RowOutputs& outputs,
                 EvalCache* cache);

}  // namespace fz
