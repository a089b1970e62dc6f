// Python bindings of the search core (native/search): trees, the leaf batches they fill, the
// evaluation cache, and the batched gather / apply over many trees. frugalzero.search.native
// wraps them in SearchTree's interface; nothing here is meant to be called from elsewhere.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "python/arrays.h"
#include "search/batch.h"
#include "search/tree.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using fz::py::Array;
using fz::py::ending_name;
using fz::py::to_numpy;

nb::dict result_dict(const fz::ResultData& r) {
    nb::dict d;
    d["moves"] = to_numpy(r.moves);
    d["visits"] = to_numpy(r.visits);
    d["q"] = to_numpy(r.q);
    d["policy"] = to_numpy(r.policy);
    d["target_indices"] = to_numpy(r.target_indices);
    d["target_probs"] = to_numpy(r.target_probs);
    d["value"] = r.value;
    d["best"] = r.best;
    d["pv"] = r.pv;
    d["mate_in"] = r.has_mate ? nb::object(nb::int_(r.mate_in)) : nb::none();
    d["nodes"] = r.nodes;
    d["depth"] = r.depth;
    d["simulations"] = r.simulations;
    nb::list lines;
    for (const fz::RootLineData& line : r.lines) {
        lines.append(nb::make_tuple(line.move, line.visits, line.q,
                                    line.has_mate ? nb::object(nb::int_(line.mate_in)) : nb::none(),
                                    line.has_draw ? nb::object(nb::float_(line.draw)) : nb::none(),
                                    line.pv));
    }
    d["lines"] = lines;
    return d;
}

using Trees = std::vector<fz::Tree*>;

}  // namespace

void bind_search(nb::module_& m) {
    m.attr("IDLE_WALKS") = fz::IDLE_WALKS;
    nb::class_<fz::SearchParams>(m, "SearchParams", "the search's knobs (SearchConfig, copied)")
        .def(nb::init<>())
        .def_rw("c_init", &fz::SearchParams::c_init)
        .def_rw("c_base", &fz::SearchParams::c_base)
        .def_rw("fpu_absolute", &fz::SearchParams::fpu_absolute)
        .def_rw("fpu_value", &fz::SearchParams::fpu_value)
        .def_rw("policy_temperature", &fz::SearchParams::policy_temperature)
        .def_rw("root_noise", &fz::SearchParams::root_noise)
        .def_rw("dirichlet_epsilon", &fz::SearchParams::dirichlet_epsilon)
        .def_rw("nscl", &fz::SearchParams::nscl)
        .def_rw("gumbel", &fz::SearchParams::gumbel)
        .def_rw("gumbel_m", &fz::SearchParams::gumbel_m)
        .def_rw("gumbel_noise", &fz::SearchParams::gumbel_noise)
        .def_rw("c_visit", &fz::SearchParams::c_visit)
        .def_rw("c_scale", &fz::SearchParams::c_scale)
        .def_rw("gumbel_rescale", &fz::SearchParams::gumbel_rescale)
        .def_rw("virtual_loss", &fz::SearchParams::virtual_loss)
        .def_rw("leaves_per_gather", &fz::SearchParams::leaves_per_gather)
        .def_rw("collisions", &fz::SearchParams::collisions)
        .def_rw("draw_repetitions", &fz::SearchParams::draw_repetitions)
        .def_rw("fifty_move_draw", &fz::SearchParams::fifty_move_draw)
        .def_rw("solver", &fz::SearchParams::solver)
        .def_rw("reuse_tree", &fz::SearchParams::reuse_tree)
        .def_rw("default_simulations", &fz::SearchParams::default_simulations);

    nb::class_<fz::EvalCache>(m, "EvalCache", "the network's answers by input, least recently used out")
        .def(nb::init<size_t>(), "capacity"_a)
        .def("resize", &fz::EvalCache::resize, "capacity"_a)
        .def("clear", &fz::EvalCache::clear)
        .def_prop_ro("size", &fz::EvalCache::size)
        .def_prop_ro("capacity", &fz::EvalCache::capacity)
        .def_prop_ro("memory_bytes", &fz::EvalCache::memory_bytes, "bytes its tables take when full")
        .def_ro("hits", &fz::EvalCache::hits)
        .def_ro("misses", &fz::EvalCache::misses);

    nb::class_<fz::LeafBatch>(m, "LeafBatch", "the leaves of one network batch")
        .def(nb::init<>())
        .def("clear", &fz::LeafBatch::clear)
        .def_prop_ro("leaves", &fz::LeafBatch::leaves)
        .def_prop_ro("rows", &fz::LeafBatch::rows)
        .def_prop_ro("width", &fz::LeafBatch::width)
        .def("frames", [](const fz::LeafBatch& b) {
            return to_numpy(b.frames(), {size_t(b.rows()), size_t(fz::HISTORY), size_t(fz::FRAME_WORDS)});
        }, "(rows, 8, 13) uint64: each row's history frames, newest first")
        .def("meta", [](const fz::LeafBatch& b) {
            return to_numpy(b.meta(), {size_t(b.rows()), size_t(fz::META_FIELDS)});
        })
        .def("indices", [](const fz::LeafBatch& b, int width) {
            if (width < b.width()) throw nb::value_error("width is narrower than the batch");
            std::vector<int16_t> out(size_t(b.rows()) * size_t(width));
            b.padded_indices(out.data(), width);
            return to_numpy(std::move(out), {size_t(b.rows()), size_t(width)});
        }, "width"_a, "(rows, width) int16: policy indices of the legal moves, zero-padded")
        .def("write_rows", [](const fz::LeafBatch& b,
                              nb::ndarray<uint64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> frames,
                              nb::ndarray<int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> meta,
                              nb::ndarray<int16_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> index,
                              nb::ndarray<int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> counts) {
            const size_t rows = size_t(b.rows()), width = size_t(b.width());
            constexpr size_t frame_words = size_t(fz::HISTORY) * size_t(fz::FRAME_WORDS);
            if (frames.shape(0) < rows || meta.shape(0) < rows || index.shape(0) < rows ||
                counts.shape(0) < rows)
                throw nb::value_error("the buffers have fewer rows than the batch");
            if (frames.shape(1) != frame_words || meta.shape(1) != size_t(fz::META_FIELDS) ||
                index.shape(1) < width)
                throw nb::value_error("the buffers' columns do not fit the batch's rows");
            std::copy_n(b.frames().data(), rows * frame_words, frames.data());
            std::copy_n(b.meta().data(), rows * size_t(fz::META_FIELDS), meta.data());
            const size_t stride = index.shape(1);
            for (size_t r = 0; r < rows; ++r) {
                const size_t count = size_t(b.counts()[r]);
                int16_t* out = index.data() + r * stride;
                std::copy_n(&b.indices()[size_t(b.offsets()[r])], count, out);
                std::fill(out + count, out + width, int16_t(0));
                counts.data()[r] = int64_t(count);
            }
            return rows;
        }, "frames"_a, "meta"_a, "index"_a, "counts"_a,
           "the rows into the first rows of the given buffers (an inference process's shared "
           "memory: one copy), the indices zero-padded to the batch's width; returns the rows")
        .def("counts", [](const fz::LeafBatch& b) {
            std::vector<int64_t> counts(b.counts().begin(), b.counts().end());
            return to_numpy(std::move(counts));
        })
        .def("row_moves", [](const fz::LeafBatch& b, int row) {
            if (row < 0 || row >= b.rows()) throw nb::index_error();
            auto at = b.moves().begin() + b.offsets()[size_t(row)];
            return to_numpy(std::vector<uint16_t>(at, at + b.counts()[size_t(row)]));
        }, "row"_a)
        .def("row_indices", [](const fz::LeafBatch& b, int row) {
            if (row < 0 || row >= b.rows()) throw nb::index_error();
            auto at = b.indices().begin() + b.offsets()[size_t(row)];
            return to_numpy(std::vector<int64_t>(at, at + b.counts()[size_t(row)]));
        }, "row"_a)
        .def("leaf_trees", [](const fz::LeafBatch& b) {
            std::vector<int32_t> out;
            for (int i = 0; i < b.leaves(); ++i) out.push_back(b.leaf(i).tree);
            return to_numpy(std::move(out));
        })
        .def("leaf_nodes", [](const fz::LeafBatch& b) {
            std::vector<int32_t> out;
            for (int i = 0; i < b.leaves(); ++i) out.push_back(b.leaf(i).node);
            return to_numpy(std::move(out));
        })
        .def("leaf_rows", [](const fz::LeafBatch& b) {
            std::vector<int32_t> out;
            for (int i = 0; i < b.leaves(); ++i) out.push_back(b.leaf(i).row);
            return to_numpy(std::move(out));
        });

    nb::class_<fz::Tree>(m, "Tree", "one game's search tree (frugalzero.search.native.NativeTree)")
        .def(nb::init<const fz::History&, const fz::SearchParams&, uint64_t>(), "history"_a,
             "params"_a, "seed"_a)
        .def("start", [](fz::Tree& t, double simulations, const std::vector<uint16_t>& only,
                          nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu> noise) {
            std::vector<double> draws(noise.data(), noise.data() + noise.shape(0));
            t.start(simulations, only, draws);
        }, "simulations"_a, "only"_a, "noise"_a)
        .def_prop_ro("finished", &fz::Tree::finished)
        .def("gather", [](fz::Tree& t, fz::LeafBatch& batch, int tree_index, int limit,
                           fz::EvalCache* cache) {
            return t.gather(limit, batch, tree_index, cache);
        }, "batch"_a, "tree_index"_a = 0, "limit"_a = 0, "cache"_a.none() = nb::none())
        .def("apply_priors", [](fz::Tree& t, int node,
                                 nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu> priors,
                                 double value, double draw) {
            t.apply_priors(node, priors.data(), int(priors.shape(0)), value, draw);
        }, "node"_a, "priors"_a, "value"_a, "draw"_a = std::numeric_limits<double>::quiet_NaN())
        .def("apply_logits", [](fz::Tree& t, int node,
                                 nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu> logits,
                                 double value, double draw) {
            t.apply_logits(node, logits.data(), int(logits.shape(0)), value, draw);
        }, "node"_a, "logits"_a, "value"_a, "draw"_a = std::numeric_limits<double>::quiet_NaN())
        .def("advance", [](fz::Tree& t, uint16_t move) { t.advance(fz::Move(move)); }, "move"_a)
        .def("root_status", [](const fz::Tree& t, int draw_repetitions, bool fifty_move_draw) {
            fz::Status s = t.root_status(draw_repetitions, fifty_move_draw);
            return nb::make_tuple(ending_name(s.ending), s.value);
        }, "draw_repetitions"_a = 3, "fifty_move_draw"_a = true)
        .def("result", [](const fz::Tree& t, int lines) { return result_dict(t.result(lines)); },
             "lines"_a = 1)
        .def("training_target", [](const fz::Tree& t) {
            fz::ResultData r = t.result(0, false);
            return nb::make_tuple(to_numpy(std::move(r.target_indices)),
                                  to_numpy(std::move(r.target_probs)), r.value, to_numpy(std::move(r.q)));
        }, "(policy indices, probabilities, root value, every root move's Q): self-play's record")
        .def("best_slot", &fz::Tree::best_slot)
        .def("leader", &fz::Tree::leader)
        .def("choice_visits", [](const fz::Tree& t) { return to_numpy(t.choice_visits()); })
        .def("root_moves", [](const fz::Tree& t) { return to_numpy(t.root_moves()); })
        .def("root_move", [](const fz::Tree& t, int slot) {
            if (slot < 0 || slot >= t.root_count()) throw nb::index_error();
            return t.link(t.root(), slot).move;
        }, "slot"_a, "the raw move of the root's ``slot``")
        .def("release", &fz::Tree::release)
        .def_prop_ro("memory_bytes", &fz::Tree::memory_bytes, "bytes the tree's arenas hold")
        .def("set_memory_limit", &fz::Tree::set_memory_limit, "bytes"_a,
             "stop searching before the tree could pass ``bytes`` (0: no limit)")
        .def_prop_ro("memory_limit", &fz::Tree::memory_limit)
        .def_prop_ro("memory_full", &fz::Tree::memory_full, "this search stopped at the limit")
        .def_prop_ro("root_proven", &fz::Tree::root_proven)
        .def_prop_ro("prepared", &fz::Tree::prepared)
        .def_prop_ro("root_count", &fz::Tree::root_count)
        .def_prop_ro("root_state", &fz::Tree::root_state)
        .def_prop_ro("started", &fz::Tree::started)
        .def_prop_ro("target", &fz::Tree::target)
        .def_prop_ro("in_flight", &fz::Tree::in_flight)
        .def_prop_ro("generation", &fz::Tree::generation)
        .def_prop_ro("max_depth", &fz::Tree::max_depth)
        .def_prop_ro("root", &fz::Tree::root)
        .def_prop_ro("node_count", &fz::Tree::node_count)
        .def_prop_ro("draw_state", &fz::Tree::draw_state)
        .def("node", [](const fz::Tree& t, int id) {
            if (id < 0 || id >= t.node_count()) throw nb::index_error();
            const fz::Node& n = t.node(id);
            nb::dict d;
            d["state"] = int(n.state);
            d["n"] = n.n;
            d["w"] = n.w;
            d["value"] = n.value;
            d["visited_p"] = n.visited_p;
            d["draw"] = std::isnan(n.draw) ? nb::object(nb::none()) : nb::object(nb::float_(n.draw));
            d["proven"] = int(n.proven);
            d["plies"] = n.plies;
            d["count"] = int(n.count);
            d["parent"] = n.parent;
            d["slot"] = int(n.slot);
            d["key"] = n.key;
            d["reps"] = int(n.reps);
            // the generation it was frozen in (this search's or none): the reference's field
            d["frozen_gen"] = n.frozen_gen == uint16_t(t.generation()) ? t.generation() : -1;
            d["has_block"] = n.has_block;
            return d;
        }, "id"_a, "a node's fields, for inspection")
        .def("edges", [](const fz::Tree& t, int id) {
            if (id < 0 || id >= t.node_count()) throw nb::index_error();
            const fz::Node& n = t.node(id);
            std::vector<double> N, W, P, S;
            std::vector<int32_t> child;
            std::vector<uint16_t> move, index;
            std::vector<uint8_t> blocked;
            const bool expanded = n.state == fz::EXPANDED;  // else the Edges are unwritten
            for (int s = 0; n.edges >= 0 && s < n.count; ++s) {
                const fz::Edge e = expanded ? t.edge(id, s) : fz::Edge{0.0, 0.0f, 0, -1, 0};
                N.push_back(double(e.N));
                W.push_back(e.W);
                P.push_back(e.prior);
                S.push_back(expanded ? t.selection_prior(id, s) : 0.0);
                const fz::Link& l = t.link(id, s);
                child.push_back(e.child);
                move.push_back(l.move);
                index.push_back(l.index);
                blocked.push_back(l.blocked);
            }
            nb::dict d;
            d["N"] = to_numpy(std::move(N));
            d["W"] = to_numpy(std::move(W));
            d["raw"] = to_numpy(std::move(P));
            d["P"] = to_numpy(std::move(S));
            d["child"] = to_numpy(std::move(child));
            d["move"] = to_numpy(std::move(move));
            d["index"] = to_numpy(std::move(index));
            d["blocked"] = to_numpy(std::move(blocked));
            return d;
        }, "id"_a, "a node's edge arrays, for inspection")
        .def("frozen", [](const fz::Tree& t, int id) { return to_numpy(t.frozen_distribution(id)); },
             "id"_a);

    m.def("history_rows", [](const std::vector<const fz::History*>& histories, fz::LeafBatch& batch,
                             fz::EvalCache* cache) {
        for (size_t i = 0; i < histories.size(); ++i) batch.add_history(int(i), -1, *histories[i], cache);
    }, "histories"_a, "batch"_a, "cache"_a.none() = nb::none(),
       "the current position of every history into ``batch`` (history i's row or cached leaf names i)");

    m.def("finished_trees", [](const Trees& trees) {
        std::vector<int> done;
        for (size_t i = 0; i < trees.size(); ++i)
            if (trees[i]->finished()) done.push_back(int(i));
        return done;
    }, "trees"_a, "indices of the trees whose search is complete");

    m.def("gather_trees", [](const Trees& trees, fz::LeafBatch& batch, fz::EvalCache* cache, int limit) {
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
        auto begin_next = [&]() -> fz::Tree* {  // the next tree with a walk to take, or none
            while (next < n) {
                fz::Tree* tree = trees[next];
                const int index = int(next);
                next += 1;
                fetch_ahead(next);
                if (tree->gather_begin(limit, batch, index, cache)) return tree;
                total += tree->gather_end();
            }
            return nullptr;
        };
        fz::Tree* walkers[WALKERS];
        size_t live = 0;
        try {
            while (live < WALKERS) {
                fz::Tree* tree = begin_next();
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
                    fz::Tree* tree = begin_next();
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
    }, "trees"_a, "batch"_a, "cache"_a.none() = nb::none(), "limit"_a = 0,
       "every tree's leaves into ``batch`` (tree i's rows name i)");

    m.def("apply_batch", [](const Trees& trees, const fz::LeafBatch& batch,
                             nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> logits,
                             nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu> values,
                             std::optional<nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>> wdl,
                             fz::EvalCache* cache) {
        const size_t rows = size_t(batch.rows());
        if (logits.shape(0) != rows || values.shape(0) != rows || (wdl && wdl->shape(0) != rows))
            throw nb::value_error("one output row per network row");
        const size_t width = logits.shape(1);
        if (rows && int(width) < batch.width()) throw nb::value_error("logits narrower than the batch");
        if (wdl && wdl->shape(1) != 3) throw nb::value_error("wdl must have 3 columns");
        for (int i = 0; i < batch.leaves(); ++i)
            if (batch.leaf(i).tree < 0 || size_t(batch.leaf(i).tree) >= trees.size())
                throw nb::value_error("the batch was gathered from other trees");
        const float* L = logits.data();
        const float* V = values.data();
        const float* D = wdl ? wdl->data() : nullptr;
        const int leaves = batch.leaves();
        for (int i = 0; i < leaves && i < 3; ++i) trees[size_t(batch.leaf(i).tree)]->prefetch_self();
        for (int i = 0; i < leaves && i < 2; ++i) {
            const fz::Leaf& next = batch.leaf(i);
            trees[size_t(next.tree)]->prefetch_node(next.node);
        }
        if (leaves) trees[size_t(batch.leaf(0).tree)]->prefetch_leaf(batch.leaf(0).node);
        for (int i = 0; i < leaves; ++i) {
            const fz::Leaf& leaf = batch.leaf(i);
            if (i + 3 < leaves) trees[size_t(batch.leaf(i + 3).tree)]->prefetch_self();
            if (i + 2 < leaves) {
                const fz::Leaf& next = batch.leaf(i + 2);
                trees[size_t(next.tree)]->prefetch_node(next.node);
            }
            if (i + 1 < leaves) {
                const fz::Leaf& next = batch.leaf(i + 1);
                trees[size_t(next.tree)]->prefetch_leaf(next.node);
                if (cache && next.row >= 0) cache->prefetch(batch.keys()[size_t(next.row)]);
            }
            const double nan = std::numeric_limits<double>::quiet_NaN();
            if (leaf.row >= 0) {
                const float* row = L + size_t(leaf.row) * width;
                const float* w = D ? D + size_t(leaf.row) * 3 : nullptr;
                if (cache) cache->put(batch.keys()[size_t(leaf.row)], row, leaf.count, V[leaf.row], w);
                trees[size_t(leaf.tree)]->apply_logits(leaf.node, row, leaf.count, V[leaf.row],
                                                       w ? double(w[1]) : nan);
            } else {
                trees[size_t(leaf.tree)]->apply_logits(leaf.node, batch.cached_logits(leaf), leaf.count,
                                                       leaf.value, leaf.has_wdl ? double(leaf.wdl[1]) : nan);
            }
        }
    }, "trees"_a, "batch"_a, "logits"_a, "values"_a, "wdl"_a.none() = nb::none(), "cache"_a.none() = nb::none(),
       "hand every leaf of ``batch`` its evaluation, in gather order: the rows' from the network "
       "(logits of the legal moves, values, optional WDL), the others' from the cache");
}
