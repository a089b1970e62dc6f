// One game's search tree in C++: PUCT with virtual loss and collisions, first-play urgency,
// the policy temperature, Dirichlet root noise, search-contempt, Gumbel root search, the
// MCTS-solver, tree reuse and restricted (searchmoves) roots.
//
// It is a transcription of the Python reference, tests/oracle/tree.py, operation for
// operation: the same selection rules and tie-breaks, the same floating-point expressions in
// the same order (NumPy's pairwise sums included, native/search/numeric.h), so that with a
// deterministic evaluator and no noise both trees give identical visit counts move after move
// (tests/test_search_native.py). Where the two differ is layout:
//   - nodes and edges live in arenas (vectors) and link both ways; a kept subtree is copied to
//     fresh arenas when the root advances, so memory is what the tree holds, no more;
//   - nodes keep no board: a walk replays the moves from the root (a copy and a make-move a
//     ply), and a node keeps its Zobrist key and repetition count for the history planes;
//   - leaves are written straight into a LeafBatch (frames, meta, policy indices) that the
//     network reads, with no per-position Python.
// Random draws: contempt's uniforms come from SplitMix64 (the same stream as the reference);
// Dirichlet and Gumbel noise are drawn by the caller in Python and handed in with start().
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "chess/position.h"
#include "search/draws.h"
#include "search/params.h"

namespace fz {

class LeafBatch;
class EvalCache;

enum NodeState : uint8_t { NEW = 0, PENDING = 1, EXPANDED = 2, TERMINAL = 3 };

// Walks one gather() may spend backing up terminal or proven nodes before it returns, so an
// unbounded search whose every walk ends in one still hands control back (as the oracle's).
constexpr int IDLE_WALKS = 1024;

// A node's moves in two parallel arrays: what a walk reads of every move and of the move it
// takes (24 bytes a move: scanning a node's thirty-odd moves streams through a few cache lines,
// and the move taken and its child come with them), and the rest, read only when a child is
// made, for the solver's and a restricted root's blocks, and for the results.
//
// A leaf's Links are written when it is gathered, its Edges only when its evaluation comes
// back (expand): the edge arena is not initialised when it grows (EdgeArena), so the Edges'
// cache lines are written once, not twice (a fresh leaf's ~1 KB is out of the CPU's caches
// again by the time its batch returns). Nothing reads the Edges of a node before it is
// EXPANDED; its moves are in its Links from the start.
struct Edge {
    double W;        // value sum, the parent's side-to-move view, virtual losses included
    float prior;     // the network's prior at the policy temperature, in the network's
                     // precision (Python: node.raw, rounded to float32 the same way)
    uint32_t N;      // visits, virtual ones included
    int32_t child;   // node id, -1 while the move was never tried
    uint16_t move;   // Move::raw
};

struct Link {
    uint16_t move = 0;     // Move::raw (also the Edge's, once the node is expanded)
    uint16_t index = 0;    // AlphaZero policy index of the move
    bool blocked = false;  // -inf in Python's block array: proven lost, or not allowed here
};

// A vector whose growth leaves new elements uninitialised (default-initialised: nothing, for
// a trivial type).
template <class T>
struct Uninitialised : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = Uninitialised<U>;
    };
    Uninitialised() = default;
    template <class U>
    Uninitialised(const Uninitialised<U>&) {}
    template <class U, class... Args>
    void construct(U* at, Args&&... args) {
        if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(at)) U;
        else ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
    }
};
static_assert(std::is_trivially_default_constructible_v<Edge>);
using EdgeArena = std::vector<Edge, Uninitialised<Edge>>;

// One cache line: a walk reads one line of every node it passes.
struct alignas(64) Node {
    uint64_t key = 0;
    double w = 0.0;          // simulations' value sum, this node's side-to-move view
    double value = 0.0;      // the network's (or the terminal) value
    double visited_p = 0.0;  // selection prior mass of the visited children (FPU reduction)
    float draw = std::numeric_limits<float>::quiet_NaN();  // WDL heads: the draw probability
                                                           // (the network's float)
    int32_t n = 0;           // simulations through this node, its own evaluation included
    int32_t parent = -1;
    int32_t edges = -1;      // first edge (and link) in the arenas
    int32_t frozen = -1;     // search-contempt: offset of the cumulative frozen distribution
    uint16_t frozen_gen = 0xFFFF;  // ... frozen in the search of this generation (mod 2^16)
    int16_t plies = 0;       // plies to the end when proven
    uint16_t count = 0;  // legal moves (edges)
    int16_t slot = -1;   // index in the parent's edges
    uint8_t state = NEW;
    uint8_t reps = 0;  // earlier occurrences of the position (game + path): the frame's count
    int8_t proven = 0;  // +1 won / -1 lost for the side to move here
    bool has_block = false;  // Python: block is not None
};
static_assert(sizeof(Node) == 64);

// A search's outcome (NativeTree.result()), declared once as X(type, name): the structs below
// and the binding's dicts are generated from these tables, whose names are those of
// frugalzero.search.types.RootLine and SearchResult (tests/test_search_seam.py holds them
// alike). Moves are raw (Move::raw); an empty optional is Python's None. Every field starts
// value-initialised: empty, zero, none.
// clang-format off
#define FZ_ROOT_LINE_FIELDS(X)                                                              \
    X(uint16_t, move)                                                                       \
    X(double, visits)                                                                       \
    X(double, q)                                                                            \
    X(std::optional<int>, mate_in)                                                          \
    X(std::optional<double>, draw)                                                          \
    X(std::vector<uint16_t>, pv)

#define FZ_RESULT_FIELDS(X)                                                                 \
    X(std::vector<uint16_t>, moves)                                                         \
    X(std::vector<double>, visits)                                                          \
    X(std::vector<double>, q)                                                               \
    X(std::vector<double>, policy)                                                          \
    X(std::vector<int64_t>, target_indices)                                                 \
    X(std::vector<float>, target_probs)                                                     \
    X(double, value)                                                                        \
    X(std::optional<uint16_t>, best_move)                                                   \
    X(std::vector<uint16_t>, pv)                                                            \
    X(std::optional<int>, mate_in)                                                          \
    X(int, nodes)                                                                           \
    X(int, depth)                                                                           \
    X(int64_t, simulations)                                                                 \
    X(std::vector<RootLineData>, lines)
// clang-format on

#define FZ_RESULT_MEMBER(type, name) type name{};
struct RootLineData {
    FZ_ROOT_LINE_FIELDS(FZ_RESULT_MEMBER)
};

struct ResultData {
    FZ_RESULT_FIELDS(FZ_RESULT_MEMBER)
};
#undef FZ_RESULT_MEMBER

class Tree {
public:
    Tree(const History& history, const SearchParams& params, uint64_t draw_seed);

    // -- a search ------------------------------------------------------------------------------
    // ``simulations`` 0 or infinite: until stopped. ``only``: the root moves this search may
    // visit (empty: all). ``noise``: Dirichlet draws over the root's moves (root_noise, not
    // Gumbel) or Gumbel draws (gumbel with gumbel_noise); empty: none.
    void start(double simulations, const std::vector<uint16_t>& only,
               const std::vector<double>& noise);
    bool finished() const;
    // Walk to at most ``limit`` (0: leaves_per_gather) leaves needing the network, writing
    // them to ``batch`` as rows of tree ``tree_index``; returns how many.
    int gather(int limit, LeafBatch& batch, int tree_index, EvalCache* cache);
    // The same in stages, for gather_trees to walk several trees at once: a walk stops at each
    // node it reaches, once when the node's cache line is fetched and once when its moves
    // are, and the other trees' walks go on meanwhile, so the trees' memory latencies overlap
    // instead of adding up. gather() is begin, steps until one returns false, end.
    bool gather_begin(int limit, LeafBatch& batch, int tree_index, EvalCache* cache);
    bool gather_step();
    int gather_end();
    // Start fetching what a later walk reads first into the CPU's cache, while other trees are
    // walked (hundreds of trees do not fit in it), in three stages a tree apart, since each
    // stage reads what the one before fetched: the tree object, its root node, the root's
    // moves (gather_trees). The same for the way up from a gathered leaf: its node, then its
    // parent and the parent's move to it (apply_batch).
    void prefetch_self() const;
    void prefetch_root_node() const;
    void prefetch_root() const;
    void prefetch_node(int node) const;
    void prefetch_leaf(int node) const;
    // Expand a gathered leaf with priors over its moves (already probabilities at T = 1,
    // tempered here), or with logits (softmax at the policy temperature here).
    void apply_priors(int node, const double* priors, int count, double value, double draw);
    void apply_logits(int node, const float* logits, int count, double value, double draw);

    // -- the game ------------------------------------------------------------------------------
    void advance(Move move);  // std::invalid_argument for an illegal move
    const History& history() const { return history_; }
    // The ending of the root position under the game's rules (chess/rules.py:game_ending).
    Status root_status(int draw_repetitions, bool fifty_move_draw) const;

    // -- reading the search ----------------------------------------------------------------------
    // ``lines`` root lines; without ``pv`` no principal variation (self-play's targets)
    ResultData result(int lines, bool with_pv = true) const;
    // KL(the search's target || the network's priors at the root) in nats: self-play's root
    // KL (frugalzero.selfplay.stats.policy_kl, ``floor`` its PRIOR_FLOOR) over result()'s
    // target and the root's priors before noise, in one call a move (issue 71); 0 before the
    // root is expanded
    double target_kl(double floor) const;
    int best_slot() const;
    // (most visited root move, its lead over the runner-up; infinite for an only move)
    std::pair<int, double> leader() const;
    // visits of the root's moves, zero where the move is proven lost (the self-play choice)
    std::vector<double> choice_visits() const;
    std::vector<uint16_t> root_moves() const;
    // Free the nodes now: the tree keeps only a fresh root (a finished game's tree).
    void release();

    // -- memory ----------------------------------------------------------------------------------
    // The bytes the tree holds: its arenas' capacities (allocated, touched or not), spare
    // arenas and the walk's scratch space included.
    size_t memory_bytes() const;
    // At most ``bytes`` (0: no limit). A search makes no walk that could take the tree past it,
    // counting the new buffer a growing arena allocates while it still holds the old one: it
    // stops there (memory_full) and finished() is true. Under a limit the spare arenas are
    // freed after each compaction, and a kept subtree that cannot be copied beside the old
    // tree is dropped (the tree starts afresh from the new root).
    void set_memory_limit(size_t bytes);
    size_t memory_limit() const { return memory_limit_; }
    bool memory_full() const { return memory_full_; }
    bool root_proven() const { return nodes_[root_].proven != 0; }
    int root_count() const { return nodes_[root_].count; }
    int root_state() const { return nodes_[root_].state; }

    int64_t started() const { return started_; }
    bool prepared() const { return prepared_; }  // this search's root setup (noise) is done
    double target() const { return target_; }
    int in_flight() const { return in_flight_; }
    int generation() const { return generation_; }
    int max_depth() const { return max_depth_; }
    uint64_t draw_state() const { return draws_.state(); }
    const SearchParams& params() const { return params_; }

    // -- inspection (tests, the Python node view) ------------------------------------------------
    int root() const { return root_; }
    const Node& node(int id) const { return nodes_.at(size_t(id)); }
    const Edge& edge(int node, int slot) const;
    const Link& link(int node, int slot) const;
    int node_count() const { return int(nodes_.size()); }
    // The selection priors of the root (noisy once prepared), else the edge priors.
    double selection_prior(int node, int slot) const;
    std::vector<double> frozen_distribution(int node) const;  // the cumulative sums

private:
    // walking
    bool walk_step(int& leaf);  // one stage of the walk; true when it ended (at ``leaf``)
    int make_child(int parent, int slot, int depth);
    void backup(int node, double value);
    void undo(int leaf);
    void expand(int node, std::vector<double>& priors, double value, double draw);
    int puct_slot(int node, double cs, double fpu) const;
    bool frozen_ready(int node);
    int sample_frozen(int node);

    // the root
    void new_root(int keep);
    void prepare_root();
    void restrict_root();
    bool allowed_all_blocked() const;
    void write_root_input(LeafBatch& batch, int tree_index, EvalCache* cache);
    int compact(int keep);  // -1: under the memory limit the kept subtree does not fit
    void release_spares();
    bool room_for_walk() const;
    int add_edges(const Move* moves, int count, Color turn);  // a new node's moves: the first

    // results
    std::vector<double> policy() const;
    // the search's target from the root's ``policy()``: the slots with a share of it, and their
    // probabilities (float, normalised as self-play records them)
    void search_target(const std::vector<double>& policy, std::vector<int>& slots,
                       std::vector<float>& probs) const;
    std::vector<double> improved_policy(int node) const;
    int best_child(int node) const;
    int winning_slot(int node) const;
    std::vector<int> ranked_slots(int node, bool restricted) const;
    std::vector<uint16_t> pv(int node, int limit) const;
    double node_q(int node) const;
    void update_proof(int parent, int slot, int child, bool& proof);

    // Gumbel root search, per search
    struct Gumbel {
        std::vector<double> base;       // g + logits
        std::vector<bool> considered;
        std::vector<int> schedule;
        std::vector<double> counts;
        size_t k = 0;
        int m = 0;
    };
    std::vector<double> gumbel_scores() const;
    int gumbel_select();
    int gumbel_interior_slot(int node) const;
    int gumbel_final() const;

    std::vector<double> completed_q(int node, const double* priors) const;

    double edge_q(const Edge& e) const { return e.W / double(e.N); }
    Edge* edges_of(int node) { return &edges_[size_t(nodes_[node].edges)]; }
    const Edge* edges_of(int node) const { return &edges_[size_t(nodes_[node].edges)]; }
    Link* links_of(int node) { return &links_[size_t(nodes_[node].edges)]; }
    const Link* links_of(int node) const { return &links_[size_t(nodes_[node].edges)]; }
    double prior_at(int node, int slot) const;

    SearchParams params_;
    Draws draws_;
    std::vector<Node> nodes_;
    EdgeArena edges_;
    std::vector<Link> links_;
    std::vector<Node> spare_nodes_;  // the arenas compaction copies into next (then swaps)
    EdgeArena spare_edges_;
    std::vector<Link> spare_links_;
    std::vector<double> frozen_;      // search-contempt cumulative distributions (this search)
    size_t compacted_ = 0;            // nodes right after the arenas were last compacted
    std::vector<uint64_t> pre_root_;  // the frames before the root's, newest first
    std::vector<uint64_t> pre_root_keys_;  // ... their positions' keys and repetition counts
    std::vector<int> pre_root_reps_;
    int root_ = 0;
    std::vector<double> root_priors_;  // the root's selection priors (noisy), once prepared
    bool root_priors_set_ = false;

    double target_ = 0.0;
    int64_t started_ = 0;
    int max_depth_ = 0;
    int generation_ = 0;
    int in_flight_ = 0;
    bool prepared_ = false;
    size_t memory_limit_ = 0;
    bool memory_full_ = false;  // this search stopped at the memory limit
    std::vector<uint16_t> only_;
    std::vector<bool> allowed_;  // empty: not restricted
    std::vector<double> noise_;
    std::unique_ptr<Gumbel> gumbel_;
    std::vector<int> collided_;  // pending leaves walked into during this gather
    std::vector<double> scratch_;  // an evaluation's priors on their way into the edges

    // the walk in progress: the nodes from the root down and their positions (scratch space
    // kept between walks), and where gather() writes its leaves
    std::vector<int> path_;
    std::vector<Position> positions_;
    LeafBatch* gather_batch_ = nullptr;
    int gather_tree_ = 0;
    EvalCache* gather_cache_ = nullptr;
    int gather_out_ = 0, gather_idle_ = 0, gather_limit_ = 1;  // leaves, idle walks, limit
    int walk_node_ = 0, walk_depth_ = 0;  // where the walk in progress is
    bool gathering_ = false, walking_ = false, walk_arrived_ = true, walk_collision_ = false;

    History history_;  // last: prefetch_self() fetches the members before it, the walk's
};

}  // namespace fz
