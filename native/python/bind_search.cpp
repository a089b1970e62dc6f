// Python bindings of the search core (native/search): trees, the leaf batches they fill, the
// evaluation cache, and the batched gather / apply over many trees (search/many.h). Only
// conversions live here: the parameters and results are generated from their tables
// (FZ_SEARCH_PARAMS, FZ_RESULT_FIELDS), the logic is the core's, where the sanitizer build runs
// it. frugalzero.search.native wraps them in NativeTree; nothing here is meant to
// be called from elsewhere.
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
#include <string>
#include <type_traits>

#include "python/arrays.h"
#include "search/batch.h"
#include "search/many.h"
#include "search/tree.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using fz::py::Array;
using fz::py::ending_name;
using fz::py::to_numpy;

// A result field as Python reads it: arrays as NumPy arrays, an empty optional as None, root
// lines as dicts, numbers as numbers.
template <class T>
nb::object to_python(T value) {
    return nb::cast(value);
}

template <class T>
    requires std::is_arithmetic_v<T>
nb::object to_python(std::vector<T> values) {
    return nb::cast(to_numpy(std::move(values)));
}

template <class T>
nb::object to_python(std::optional<T> value) {
    return value ? to_python(*value) : nb::none();
}

nb::object to_python(std::vector<fz::RootLineData> lines) {
    nb::list out;
    for (fz::RootLineData& line : lines) {
        nb::dict d;
#define FZ_LINE_ITEM(type, name) d[#name] = to_python(std::move(line.name));
        FZ_ROOT_LINE_FIELDS(FZ_LINE_ITEM)
#undef FZ_LINE_ITEM
        out.append(d);
    }
    return out;
}

// Every field of FZ_RESULT_FIELDS by its name: what NativeTree.result makes a SearchResult of;
// with ``only``, those fields alone (self-play's target every move: no arrays it does not read).
nb::dict result_dict(fz::ResultData r, const std::optional<std::vector<std::string>>& only) {
    nb::dict d;
    size_t found = 0;
    auto wanted = [&](const char* name) {
        if (!only) return true;
        const bool in = std::find(only->begin(), only->end(), name) != only->end();
        found += in;
        return in;
    };
#define FZ_RESULT_ITEM(type, name) \
    if (wanted(#name)) d[#name] = to_python(std::move(r.name));
    FZ_RESULT_FIELDS(FZ_RESULT_ITEM)
#undef FZ_RESULT_ITEM
    if (only && found != only->size()) throw nb::value_error("only names a field a result does not have");
    return d;
}

// (name, C++ type) of each field of a result table, in declaration order (the seam's test).
#define FZ_FIELD_NAME(type, name) nb::make_tuple(#name, #type),
nb::list result_fields() {
    nb::list out;
    for (nb::tuple field : {FZ_RESULT_FIELDS(FZ_FIELD_NAME)}) out.append(field);
    return out;
}

nb::list root_line_fields() {
    nb::list out;
    for (nb::tuple field : {FZ_ROOT_LINE_FIELDS(FZ_FIELD_NAME)}) out.append(field);
    return out;
}
#undef FZ_FIELD_NAME

// The search parameters as the binding's class: every field of FZ_SEARCH_PARAMS read-write,
// and fields() listing (name, C++ type, default) for search_params and the seam's test.
void bind_params(nb::module_& m) {
    nb::class_<fz::SearchParams> params(m, "SearchParams", "the search's knobs (SearchConfig, copied)");
    params.def(nb::init<>());
#define FZ_PARAM_ATTRIBUTE(type, name, value) params.def_rw(#name, &fz::SearchParams::name);
    FZ_SEARCH_PARAMS(FZ_PARAM_ATTRIBUTE)
#undef FZ_PARAM_ATTRIBUTE
    params.def_static("fields", []() {
        const fz::SearchParams defaults;
        nb::list out;
#define FZ_PARAM_FIELD(type, name, value) out.append(nb::make_tuple(#name, #type, defaults.name));
        FZ_SEARCH_PARAMS(FZ_PARAM_FIELD)
#undef FZ_PARAM_FIELD
        return out;
    }, "(name, C++ type, default) of every parameter, in declaration order");
}

// A batch's rows into the first rows of caller-owned buffers (LeafBatch.write_rows).
size_t write_rows(const fz::LeafBatch& b,
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
}

// A node's fields by the reference's names (NodeView), for inspection.
nb::dict node_fields(const fz::Tree& t, int id) {
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
}

// A node's edges as arrays (NodeView), for inspection.
nb::dict edge_arrays(const fz::Tree& t, int id) {
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
}

using Trees = std::vector<fz::Tree*>;
using Rows1 = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Rows2 = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void bind_batch(nb::module_& m) {
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
        .def("write_rows", &write_rows, "frames"_a, "meta"_a, "index"_a, "counts"_a,
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
}

void bind_tree(nb::module_& m) {
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
        .def("result", [](const fz::Tree& t, int lines, bool pv,
                          const std::optional<std::vector<std::string>>& only) {
            return result_dict(t.result(lines, pv), only);
        }, "lines"_a = 1, "pv"_a = true, "only"_a.none() = nb::none(),
             "the search's outcome: FZ_RESULT_FIELDS by name (without ``pv``, no principal "
             "variations; with ``only``, just those fields: self-play's record)")
        .def("target_kl", &fz::Tree::target_kl, "floor"_a,
             "KL(the search's target || the root's priors before noise) in nats, priors "
             "floored at ``floor``: self-play's root KL (selfplay.stats.policy_kl)")
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
        .def("node", &node_fields, "id"_a, "a node's fields, for inspection")
        .def("edges", &edge_arrays, "id"_a, "a node's edge arrays, for inspection")
        .def("frozen", [](const fz::Tree& t, int id) { return to_numpy(t.frozen_distribution(id)); },
             "id"_a);
}

void bind_many(nb::module_& m) {
    m.def("history_rows", [](const std::vector<const fz::History*>& histories, fz::LeafBatch& batch,
                             fz::EvalCache* cache) { fz::history_rows(histories, batch, cache); },
          "histories"_a, "batch"_a, "cache"_a.none() = nb::none(),
          "the current position of every history into ``batch`` (history i's row or cached leaf names i)");

    m.def("finished_trees", [](const Trees& trees) { return fz::finished_trees(trees); }, "trees"_a,
          "indices of the trees whose search is complete");

    m.def("gather_trees", [](const Trees& trees, fz::LeafBatch& batch, fz::EvalCache* cache, int limit) {
        return fz::gather_trees(trees, batch, cache, limit);
    }, "trees"_a, "batch"_a, "cache"_a.none() = nb::none(), "limit"_a = 0,
       "every tree's leaves into ``batch`` (tree i's rows name i)");

    m.def("apply_batch", [](const Trees& trees, const fz::LeafBatch& batch, Rows2 logits, Rows1 values,
                             std::optional<Rows2> wdl, fz::EvalCache* cache) {
        fz::RowOutputs out;
        out.logits = logits.data();
        out.logit_rows = logits.shape(0);
        out.width = logits.shape(1);
        out.values = values.data();
        out.value_rows = values.shape(0);
        if (wdl) {
            out.wdl = wdl->data();
            out.wdl_rows = wdl->shape(0);
            out.wdl_columns = wdl->shape(1);
        }
        fz::apply_batch(trees, batch, out, cache);
    }, "trees"_a, "batch"_a, "logits"_a, "values"_a, "wdl"_a.none() = nb::none(), "cache"_a.none() = nb::none(),
       "hand every leaf of ``batch`` its evaluation, in gather order: the rows' from the network "
       "(logits of the legal moves, values, optional WDL), the others' from the cache; "
       "ValueError when the outputs do not fit the batch");
}

}  // namespace

void bind_search(nb::module_& m) {
    m.attr("IDLE_WALKS") = fz::IDLE_WALKS;
    bind_params(m);
    m.def("result_fields", &result_fields, "(name, C++ type) of a result's fields (ResultData)");
    m.def("root_line_fields", &root_line_fields, "(name, C++ type) of a root line's fields");
    bind_batch(m);
    bind_tree(m);
    bind_many(m);
}
