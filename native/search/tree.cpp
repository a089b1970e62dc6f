#include "search/tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "search/batch.h"
#include "search/numeric.h"

namespace fz {

namespace {

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();
constexpr double INF = std::numeric_limits<double>::infinity();

// The bytes a vector holds (its capacity), and the bytes it allocates when ``more`` elements no
// longer fit (0 when they do): libstdc++ and libc++ grow to size + max(size, more).
template <class V>
size_t held(const V& v) {
    return v.capacity() * sizeof(typename V::value_type);
}
template <class V>
size_t growth(const V& v, size_t more) {
    if (v.size() + more <= v.capacity()) return 0;
    return (v.size() + std::max(v.size(), more)) * sizeof(typename V::value_type);
}

// AlphaZero's c(s) * sqrt(N(s)) (search/puct.py: c_puct, times the square root)
double exploration(int n, double c_init, double c_base) {
    double visits = double(n);
    return (c_init + std::log((visits + c_base + 1.0) / c_base)) * std::sqrt(visits);
}

// search/gumbel.py: considered_visits
std::vector<int> considered_visits(int m, int simulations) {
    std::vector<int> sequence;
    if (m <= 1) {
        sequence.resize(size_t(simulations));
        std::iota(sequence.begin(), sequence.end(), 0);
        return sequence;
    }
    int phases = 0;
    while ((1 << phases) < m) ++phases;  // ceil(log2(m))
    std::vector<int> visits(size_t(m), 0);
    int remaining = m;
    sequence.reserve(size_t(simulations));
    while (int(sequence.size()) < simulations) {
        int extra = std::max(1, simulations / (phases * remaining));
        for (int e = 0; e < extra; ++e) {
            sequence.insert(sequence.end(), visits.begin(), visits.begin() + remaining);
            for (int i = 0; i < remaining; ++i) visits[size_t(i)] += 1;
        }
        remaining = std::max(2, remaining / 2);
    }
    sequence.resize(size_t(simulations));
    return sequence;
}

int argmax(const std::vector<double>& x) {
    int best = 0;
    for (int i = 1; i < int(x.size()); ++i)
        if (x[size_t(i)] > x[size_t(best)]) best = i;
    return best;
}

std::vector<double> softmax(const std::vector<double>& x) {
    double top = *std::max_element(x.begin(), x.end());
    std::vector<double> z(x.size());
    for (size_t i = 0; i < x.size(); ++i) z[i] = std::exp(x[i] - top);
    double total = pairwise_sum(z.data(), z.size());
    for (double& v : z) v = v / total;
    return z;
}

// numpy's float32 pairwise sum (np.add.reduce with dtype float32)
float pairwise_sum_f(const float* a, size_t n) {
    if (n < 8) {
        float res = 0.0f;
        for (size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        float r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum_f(a, n2) + pairwise_sum_f(a + n2, n - n2);
}

}  // namespace

Tree::Tree(const History& history, const SearchParams& params, uint64_t draw_seed)
    : params_(params), draws_(draw_seed), history_(history) {
    new_root(-1);
}

const Edge& Tree::edge(int node, int slot) const {
    const Node& nd = nodes_.at(size_t(node));
    if (nd.edges < 0 || slot < 0 || slot >= nd.count) throw std::out_of_range("no such edge");
    return edges_[size_t(nd.edges + slot)];
}

const Link& Tree::link(int node, int slot) const {
    edge(node, slot);  // the same checks
    return links_[size_t(nodes_[size_t(node)].edges + slot)];
}

int Tree::add_edges(const Move* moves, int count, Color turn) {
    const int first = int(edges_.size());
    edges_.resize(edges_.size() + size_t(count));  // uninitialised until expand()
    links_.resize(links_.size() + size_t(count));
    Link* links = &links_[size_t(first)];
    for (int i = 0; i < count; ++i) {
        links[i].move = moves[i].raw;
        links[i].index = uint16_t(policy_index(moves[i], turn));
    }
    return first;
}

double Tree::prior_at(int node, int slot) const { return edges_of(node)[slot].prior; }

double Tree::selection_prior(int node, int slot) const {
    if (node == root_ && root_priors_set_) return root_priors_[size_t(slot)];
    return edges_of(node)[slot].prior;
}

double Tree::node_q(int id) const {
    const Node& nd = nodes_[size_t(id)];
    if (nd.proven) return double(nd.proven);
    return nd.n ? nd.w / double(nd.n) : nd.value;
}

// -- a search ---------------------------------------------------------------------------------

void Tree::start(double simulations, const std::vector<uint16_t>& only,
                 const std::vector<double>& noise) {
    if (in_flight_) throw std::runtime_error("start() while leaves are still being evaluated");
    if (std::isnan(simulations)) throw std::invalid_argument("simulations is NaN");
    only_ = only;
    // the reference's rule: 0 or infinite = until stopped, anything else a whole budget
    target_ = (simulations == 0 || std::isinf(simulations)) ? INF : std::floor(simulations);
    started_ = 0;
    max_depth_ = 0;
    generation_ += 1;
    if (uint16_t(generation_) == 0xFFFF) {  // nodes keep the generation mod 2^16: on a wrap,
        for (Node& node : nodes_) node.frozen_gen = 0xFFFF;  // forget every old one, and skip
        generation_ += 1;                                       // the "never" mark
    }
    frozen_.clear();  // every frozen distribution belonged to an earlier search
    prepared_ = false;
    memory_full_ = false;
    gumbel_.reset();
    noise_ = noise;
}

bool Tree::finished() const {
    if (in_flight_) return false;
    const Node& root = nodes_[size_t(root_)];
    if (root.state == TERMINAL || (root.proven && root.state == EXPANDED)) return true;
    if (root.state == EXPANDED && allowed_all_blocked()) return true;
    if (root.state == EXPANDED && memory_full_) return true;
    return root.state == EXPANDED && double(started_) >= target_;
}

void Tree::prefetch_self() const {
    const char* first = reinterpret_cast<const char*>(this);
    const char* last = reinterpret_cast<const char*>(&history_);
    for (const char* at = first; at < last; at += 64) __builtin_prefetch(at);
}

void Tree::prefetch_root_node() const { __builtin_prefetch(&nodes_[size_t(root_)]); }

void Tree::prefetch_node(int node) const {
    if (node >= 0 && size_t(node) < nodes_.size()) __builtin_prefetch(&nodes_[size_t(node)]);
}

void Tree::prefetch_root() const {
    const Node& root = nodes_[size_t(root_)];
    if (root.edges < 0) return;
    const char* first = reinterpret_cast<const char*>(&edges_[size_t(root.edges)]);
    const char* last = first + sizeof(Edge) * root.count;
    for (const char* p = first; p < last; p += 64) __builtin_prefetch(p);
}

void Tree::prefetch_leaf(int node) const {
    if (node < 0 || size_t(node) >= nodes_.size()) return;
    const Node& leaf = nodes_[size_t(node)];
    if (leaf.edges >= 0) {  // the Edges expand() writes
        const char* first = reinterpret_cast<const char*>(&edges_[size_t(leaf.edges)]);
        const char* last = first + sizeof(Edge) * leaf.count;
        for (const char* p = first; p < last; p += 64) __builtin_prefetch(p, 1);
        __builtin_prefetch(&links_[size_t(leaf.edges)]);
    }
    if (leaf.parent >= 0) {
        const Node& parent = nodes_[size_t(leaf.parent)];
        __builtin_prefetch(&parent);
        __builtin_prefetch(&edges_[size_t(parent.edges + leaf.slot)]);
    }
}

int Tree::gather(int limit, LeafBatch& batch, int tree_index, EvalCache* cache) {
    if (!gather_begin(limit, batch, tree_index, cache)) return gather_end();
    try {
        while (gather_step()) {
        }
    } catch (...) {  // the tree left consistent: collisions undone, leaves counted
        gather_end();
        throw;
    }
    return gather_end();
}

bool Tree::gather_begin(int limit, LeafBatch& batch, int tree_index, EvalCache* cache) {
    if (gathering_) throw std::logic_error("a tree gathered twice at once");
    gathering_ = true;
    walking_ = false;
    gather_out_ = 0;
    gather_idle_ = 0;
    gather_limit_ = limit <= 0 ? params_.leaves_per_gather : limit;
    Node& root = nodes_[size_t(root_)];
    if (root.state != EXPANDED) {
        if (root.state == NEW) {
            root.state = PENDING;
            write_root_input(batch, tree_index, cache);
            gather_out_ = 1;
        }
        return false;
    }
    if (!prepared_) prepare_root();
    gather_batch_ = &batch;
    gather_tree_ = tree_index;
    gather_cache_ = cache;
    return true;
}

bool Tree::gather_step() {
    if (!walking_) {  // the next walk, if this gather takes one
        if (!(gather_out_ < gather_limit_ && double(started_) < target_ &&
              !nodes_[size_t(root_)].proven))
            return false;
        if (!allowed_.empty() && allowed_all_blocked()) return false;
        if (memory_limit_ && !room_for_walk()) {
            memory_full_ = true;
            return false;
        }
        walking_ = true;
        walk_collision_ = false;
        walk_arrived_ = true;  // the root's node and moves are fetched already (gather_trees)
        walk_node_ = root_;
        walk_depth_ = 0;
        path_.clear();
        positions_.clear();
        positions_.push_back(history_.current());
    }
    int leaf = -1;
    if (!walk_step(leaf)) return true;  // another stage of this walk
    walking_ = false;
    if (walk_collision_) {
        if (int(collided_.size()) > params_.collisions) return false;
    } else if (nodes_[size_t(leaf)].state == PENDING) {
        gather_out_ += 1;
    } else if (++gather_idle_ >= IDLE_WALKS) {
        return false;  // every walk ends in a terminal: hand back control (the caller's clock)
    }
    return true;
}

int Tree::gather_end() {
    gather_batch_ = nullptr;
    gathering_ = false;
    walking_ = false;
    for (int leaf : collided_) undo(leaf);
    collided_.clear();
    in_flight_ += gather_out_;
    return gather_out_;
}

bool Tree::walk_step(int& leaf) {
    const int node = walk_node_;
    Node* nd = &nodes_[size_t(node)];
    if (!walk_arrived_) {  // the node's line has come (it was fetched a stage ago): fetch its
        walk_arrived_ = true;  // moves for the next stage
        if (nd->state == EXPANDED && nd->edges >= 0) {
            const char* first = reinterpret_cast<const char*>(&edges_[size_t(nd->edges)]);
            const char* last = first + sizeof(Edge) * nd->count;
            for (const char* p = first; p < last; p += 64) __builtin_prefetch(p);
            return false;
        }
    }
    const int depth = walk_depth_;
    if (nd->state != EXPANDED || (nd->proven && node != root_)) {
        leaf = node;
        if (nd->state == PENDING) {  // gather() takes the virtual visits back later
            collided_.push_back(node);
            walk_collision_ = true;
            return true;
        }
        started_ += 1;
        double value = nd->state == TERMINAL ? nd->value : double(nd->proven);
        backup(node, value);
        return true;
    }
    int slot;
    if ((depth & 1) && double(nd->n) > params_.nscl && frozen_ready(node)) {
        slot = sample_frozen(node);
    } else if (params_.gumbel) {
        slot = node == root_ ? gumbel_select() : gumbel_interior_slot(node);
    } else {
        int n = nd->n;
        double parent_q = nd->w / double(n);
        double fpu = params_.fpu_absolute
                         ? params_.fpu_value
                         : parent_q - params_.fpu_value * std::sqrt(std::max(nd->visited_p, 0.0));
        slot = puct_slot(node, exploration(n, params_.c_init, params_.c_base), fpu);
    }
    // virtual visit: counts at once, the value when the evaluation comes back
    const double vl = params_.virtual_loss;
    Edge& e = edges_of(node)[slot];
    if (e.child >= 0) __builtin_prefetch(&nodes_[size_t(e.child)]);  // for the next stage
    if (e.N == 0) nd->visited_p += selection_prior(node, slot);
    e.N += 1;
    e.W = e.W - vl;
    nd->n += 1;
    path_.push_back(node);
    walk_depth_ = depth + 1;
    positions_.push_back(positions_.back());
    positions_.back().play(Move(e.move));
    int child = e.child;
    if (child < 0) {
        child = make_child(node, slot, depth + 1);
        edges_of(node)[slot].child = child;
        if (depth + 1 > max_depth_) max_depth_ = depth + 1;
        started_ += 1;
        if (nodes_[size_t(child)].state == TERMINAL) backup(child, nodes_[size_t(child)].value);
        leaf = child;
        return true;
    }
    walk_node_ = child;
    walk_arrived_ = false;
    return false;
}

int Tree::make_child(int parent, int slot, int depth) {
    const Position& pos = positions_.back();
    const uint64_t key = pos.key;
    int reps = 0;
    const int clock = pos.halfmove_clock;
    if (clock >= 4) {  // a repetition needs at least four reversible plies
        reps = history_.count(key);  // the root's and the game's positions
        // the tree's positions with the same side to move, below the root
        const int last = std::min(clock, int(path_.size()) - 1);
        for (int distance = 2; distance <= last; distance += 2)
            if (nodes_[size_t(path_[path_.size() - size_t(distance)])].key == key) reps += 1;
    }
    // the leaf's history: itself, then its ancestors (parent first), then the game's
    int64_t meta[META_FIELDS];
    pos.meta(meta);
    uint64_t keys[HISTORY] = {};
    int step_reps[HISTORY] = {};
    keys[0] = key;
    step_reps[0] = reps;
    const int ancestors = std::min(HISTORY - 1, depth);
    for (int i = 1; i <= ancestors; ++i) {
        const size_t at = size_t(depth - i);
        keys[i] = positions_[at].key;
        step_reps[i] = nodes_[size_t(path_[at])].reps;
    }
    for (int i = ancestors + 1, f = 0; i < HISTORY && f < int(pre_root_keys_.size()); ++i, ++f) {
        keys[i] = pre_root_keys_[size_t(f)];
        step_reps[i] = pre_root_reps_[size_t(f)];
    }
    const InputKey input = input_key(keys, step_reps, meta);
    if (gather_cache_) gather_cache_->prefetch(input);  // fetched while the moves are listed
    Move moves[MAX_MOVES];
    Status status = leaf_status(pos, reps, params_.draw_repetitions, params_.fifty_move_draw, moves);
    const int id = int(nodes_.size());
    nodes_.emplace_back();
    Node& node = nodes_.back();
    node.key = key;
    node.reps = uint8_t(std::min(reps, 255));
    node.parent = parent;
    node.slot = int16_t(slot);
    if (status.ending != Ending::NONE) {
        node.state = TERMINAL;
        node.value = status.value;
        if (status.value < 0 && params_.solver) node.proven = -1;
        return id;
    }
    node.state = PENDING;
    node.count = uint16_t(status.count);
    node.edges = add_edges(moves, status.count, pos.turn);
    int16_t indices[MAX_MOVES];
    const Link* links = &links_[size_t(node.edges)];
    for (int i = 0; i < status.count; ++i) indices[i] = int16_t(links[i].index);
    if (gather_batch_->add_cached(gather_tree_, id, status.count, input, gather_cache_)) return id;
    uint64_t frames[HISTORY * FRAME_WORDS] = {};
    pos.frame(frames, reps);
    for (int i = 1; i <= ancestors; ++i) {
        const size_t at = size_t(depth - i);
        positions_[at].frame(frames + i * FRAME_WORDS, step_reps[i]);
    }
    const size_t earlier = std::min(pre_root_.size(), size_t(HISTORY - 1 - ancestors) * FRAME_WORDS);
    std::copy_n(pre_root_.begin(), earlier, frames + (ancestors + 1) * FRAME_WORDS);
    gather_batch_->add_row(gather_tree_, id, frames, meta, moves, indices, status.count, input);
    return id;
}

void Tree::write_root_input(LeafBatch& batch, int tree_index, EvalCache* cache) {
    batch.add_history(tree_index, root_, history_, cache);
}

void Tree::backup(int node, double value) {
    const double vl = params_.virtual_loss;
    Node& nd = nodes_[size_t(node)];
    nd.n += 1;
    nd.w += value;
    bool proof = params_.solver && nd.proven != 0;
    int child = node;
    while (child != root_) {
        const int parent = nodes_[size_t(child)].parent;
        const int slot = nodes_[size_t(child)].slot;
        value = -value;
        Edge& e = edges_of(parent)[slot];
        e.W = e.W + value + vl;
        if (proof) {
            update_proof(parent, slot, child, proof);
            if (proof) value = double(nodes_[size_t(parent)].proven);
        }
        nodes_[size_t(parent)].w += value;
        child = parent;
    }
}

void Tree::update_proof(int parent, int slot, int child, bool& proof) {
    Node& p = nodes_[size_t(parent)];
    const Node& c = nodes_[size_t(child)];
    if (p.proven) {
        proof = false;
        return;
    }
    if (c.proven < 0) {  // the move mates / wins: the parent is won
        p.proven = 1;
        p.plies = int16_t(c.plies + 1);
        proof = true;
        return;
    }
    Edge* E = edges_of(parent);
    Link* L = links_of(parent);
    if (!p.has_block) {
        for (int s = 0; s < p.count; ++s) L[s].blocked = false;
        p.has_block = true;
    }
    L[slot].blocked = true;
    int longest = 0;
    for (int s = 0; s < p.count; ++s) {
        int ch = E[s].child;
        if (ch < 0 || nodes_[size_t(ch)].proven <= 0) {
            proof = false;
            return;
        }
        longest = std::max(longest, int(nodes_[size_t(ch)].plies));
    }
    p.proven = -1;
    p.plies = int16_t(longest + 1);
    proof = true;
}

void Tree::undo(int leaf) {
    const double vl = params_.virtual_loss;
    int child = leaf;
    while (child != root_) {
        const int parent = nodes_[size_t(child)].parent;
        const int slot = nodes_[size_t(child)].slot;
        Edge& e = edges_of(parent)[slot];
        e.N -= 1;
        e.W = e.W + vl;
        Node& p = nodes_[size_t(parent)];
        if (e.N == 0) p.visited_p -= selection_prior(parent, slot);
        p.n -= 1;
        if (parent == root_ && gumbel_) {
            gumbel_->counts[size_t(slot)] -= 1.0;
            gumbel_->k -= 1;
        }
        child = parent;
    }
}

void Tree::apply_priors(int node, const double* priors, int count, double value, double draw) {
    if (node < 0 || node >= int(nodes_.size()) || nodes_[size_t(node)].state != PENDING ||
        nodes_[size_t(node)].count != count)
        throw std::invalid_argument("apply: not a leaf waiting for this evaluation");
    std::vector<double>& p = scratch_;
    p.assign(priors, priors + count);
    const double t = params_.policy_temperature;
    if (t != 1.0) {  // search/puct.py: temper_priors
        std::vector<double> tempered(static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) tempered[size_t(i)] = std::pow(p[size_t(i)], 1.0 / t);
        double total = pairwise_sum(tempered.data(), tempered.size());
        if (total > 0) {
            for (int i = 0; i < count; ++i) p[size_t(i)] = tempered[size_t(i)] / total;
        }
    }
    expand(node, p, value, draw);
}

void Tree::apply_logits(int node, const float* logits, int count, double value, double draw) {
    if (node < 0 || node >= int(nodes_.size()) || nodes_[size_t(node)].state != PENDING ||
        nodes_[size_t(node)].count != count)
        throw std::invalid_argument("apply: not a leaf waiting for this evaluation");
    // the masked softmax at the policy temperature (the network's float precision; the sum
    // and the priors in double)
    std::vector<double>& p = scratch_;
    p.resize(size_t(count));
    float top = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < count; ++i) top = std::max(top, logits[i]);
    const float scale = float(1.0 / params_.policy_temperature);
    for (int i = 0; i < count; ++i) p[size_t(i)] = double(std::exp((logits[i] - top) * scale));
    double total = pairwise_sum(p.data(), p.size());
    if (!(total > 0) || !std::isfinite(total)) {  // non-finite logits: uniform, never NaN
        for (double& v : p) v = 1.0 / count;
    } else {
        for (double& v : p) v = v / total;
    }
    expand(node, p, value, draw);
}

void Tree::expand(int node, std::vector<double>& priors, double value, double draw) {
    in_flight_ -= 1;
    if (!std::isfinite(value)) value = 0.0;
    Node& nd = nodes_[size_t(node)];
    Edge* E = edges_of(node);
    const Link* L = links_of(node);
    for (int s = 0; s < nd.count; ++s) {
        E[s].W = 0.0;
        E[s].prior = float(priors[size_t(s)]);  // the network's precision, as the reference rounds
        E[s].N = 0;
        E[s].child = -1;
        E[s].move = L[s].move;
    }
    nd.visited_p = 0.0;
    nd.value = value;
    nd.draw = float(draw);
    nd.state = EXPANDED;
    if (node == root_) {
        nd.n = 1;
        nd.w = value;
        return;
    }
    backup(node, value);
}

int Tree::puct_slot(int node, double cs, double fpu) const {
    const Node& nd = nodes_[size_t(node)];
    const Edge* E = edges_of(node);
    const Link* L = links_of(node);
    const double* root = (node == root_ && root_priors_set_) ? root_priors_.data() : nullptr;
    if (nd.has_block) {  // proven children or a restricted root: the full scan
        double best = NEG_INF;
        int slot = 0;
        for (int s = 0; s < nd.count; ++s) {
            if (L[s].blocked) continue;
            const double p = root ? root[s] : E[s].prior;
            const double visits = double(E[s].N);
            const double score = p * cs / (visits + 1.0) + (visits > 0 ? edge_q(E[s]) : fpu);
            if (score > best) {
                best = score;
                slot = s;
            }
        }
        return slot;
    }
    // the best visited child (the lowest slot of equals), and the unvisited one with the highest
    // prior, which is the best unvisited one (they all share the first-play value)
    int unvisited = -1, slot = -1;
    double top = 0.0, best = NEG_INF;
    for (int s = 0; s < nd.count; ++s) {
        const double p = root ? root[s] : E[s].prior;
        if (E[s].N == 0) {
            if (unvisited < 0 || p > top) {
                unvisited = s;
                top = p;
            }
        } else {
            const double score = p * cs / (double(E[s].N) + 1.0) + edge_q(E[s]);
            if (score > best) {
                best = score;
                slot = s;
            }
        }
    }
    if (unvisited >= 0) {
        const double score = top * cs / 1.0 + fpu;
        if (slot < 0 || score > best || (score == best && unvisited < slot)) return unvisited;
    }
    return slot;
}

bool Tree::frozen_ready(int node) {
    Node& nd = nodes_[size_t(node)];
    if (nd.frozen_gen == uint16_t(generation_) && nd.frozen >= 0) return true;
    const Edge* E = edges_of(node);
    double total = 0.0;
    for (int s = 0; s < nd.count; ++s) total += double(E[s].N);  // whole numbers: exact
    if (total <= 0) return false;
    nd.frozen = int(frozen_.size());
    double running = 0.0;
    for (int s = 0; s < nd.count; ++s) {
        running += double(E[s].N);
        frozen_.push_back(running);
    }
    nd.frozen_gen = uint16_t(generation_);
    return true;
}

int Tree::sample_frozen(int node) {
    const Node& nd = nodes_[size_t(node)];
    const double* cum = &frozen_[size_t(nd.frozen)];
    const double x = draws_.uniform() * cum[nd.count - 1];
    // numpy.searchsorted(..., side="right"): the first entry greater than x
    return int(std::upper_bound(cum, cum + nd.count, x) - cum);
}

std::vector<double> Tree::frozen_distribution(int node) const {
    const Node& nd = nodes_.at(size_t(node));
    if (nd.frozen_gen != uint16_t(generation_) || nd.frozen < 0) return {};
    return std::vector<double>(frozen_.begin() + nd.frozen, frozen_.begin() + nd.frozen + nd.count);
}

// -- the root --------------------------------------------------------------------------------

void Tree::new_root(int keep) {
    target_ = 0.0;
    only_.clear();
    allowed_.clear();
    started_ = 0;
    max_depth_ = 0;
    gumbel_.reset();
    prepared_ = false;
    root_priors_set_ = false;
    noise_.clear();
    std::vector<uint64_t> before(static_cast<size_t>(HISTORY * FRAME_WORDS));
    history_.frames(before.data(), HISTORY);
    // the frames before the root's, newest first, as many as the game has
    int earlier = std::min(HISTORY, history_.size()) - 1;
    pre_root_.assign(before.begin() + FRAME_WORDS, before.begin() + FRAME_WORDS * (1 + earlier));
    pre_root_keys_.clear();
    pre_root_reps_.clear();
    for (int i = 1; i <= earlier; ++i) {
        pre_root_keys_.push_back(history_.at(history_.size() - 1 - i).key);
        pre_root_reps_.push_back(history_.repetitions_at(history_.size() - 1 - i));
    }
    if (keep >= 0) {
        // the other subtrees are garbage now; copy the kept one to fresh arenas once the
        // garbage outweighs what was live at the last copy (every few moves, not every move),
        // or when the last search filled the memory limit
        if (nodes_.size() > 2 * compacted_ + 256 || memory_full_) {
            keep = compact(keep);
            compacted_ = nodes_.size();
        } else {
            nodes_[size_t(keep)].parent = -1;
            nodes_[size_t(keep)].slot = -1;
        }
    }
    memory_full_ = false;
    if (keep >= 0) {
        root_ = keep;
        Node& root = nodes_[size_t(root_)];
        const Edge* E = edges_of(root_);
        std::vector<double> visited;
        for (int s = 0; s < root.count; ++s)
            if (E[s].N > 0) visited.push_back(E[s].prior);
        root.visited_p = pairwise_sum(visited.data(), visited.size());
        return;
    }
    nodes_.clear();
    edges_.clear();
    links_.clear();
    frozen_.clear();
    compacted_ = 0;
    const Position& pos = history_.current();
    Node root;
    root.key = pos.key;
    root.reps = uint8_t(std::min(history_.repetitions(), 255));
    Move moves[MAX_MOVES];
    int count = pos.legal_moves(moves);
    if (count == 0) {  // only mate and stalemate leave nothing to search
        root.state = TERMINAL;
        root.value = pos.in_check() ? -1.0 : 0.0;
    } else {
        root.count = uint16_t(count);
        root.edges = add_edges(moves, count, pos.turn);
    }
    nodes_.push_back(root);
    root_ = 0;
}

int Tree::compact(int keep) {
    size_t kept_nodes = 0, kept_edges = 0;
    std::vector<int> stack = {keep};
    while (!stack.empty()) {
        const Node& nd = nodes_[size_t(stack.back())];
        stack.pop_back();
        kept_nodes += 1;
        if (nd.edges < 0) continue;
        kept_edges += nd.count;
        if (nd.state != EXPANDED) continue;  // no children, Edges not yet written
        for (int s = 0; s < nd.count; ++s)
            if (edges_[size_t(nd.edges + s)].child >= 0) stack.push_back(edges_[size_t(nd.edges + s)].child);
    }
    // into the spare arenas (the live ones of the last compaction: memory already touched,
    // no page faults, no allocation once they are large enough), room for twice the kept
    // tree; under a memory limit into fresh ones beside the live arenas, if the copy fits
    size_t room = 2;
    if (memory_limit_) {
        release_spares();
        const size_t copy = kept_nodes * sizeof(Node) + kept_edges * (sizeof(Edge) + sizeof(Link));
        const size_t queue = kept_nodes * sizeof(std::pair<int, int>);  // the copy's own queue
        if (memory_bytes() + queue + copy > memory_limit_) return -1;
        if (memory_bytes() + queue + 2 * copy > memory_limit_) room = 1;
    }
    std::vector<Node>& nodes = spare_nodes_;
    EdgeArena& edges = spare_edges_;
    std::vector<Link>& links = spare_links_;
    nodes.clear();
    edges.clear();
    links.clear();
    nodes.reserve(room * kept_nodes);
    edges.reserve(room * kept_edges);
    links.reserve(room * kept_edges);
    // breadth first: (old id, new parent)
    std::vector<std::pair<int, int>> queue = {{keep, -1}};
    for (size_t i = 0; i < queue.size(); ++i) {
        auto [old, parent] = queue[i];
        Node nd = nodes_[size_t(old)];
        const int id = int(nodes.size());
        nd.parent = parent;
        nd.frozen = -1;
        nd.frozen_gen = 0xFFFF;
        if (parent < 0) nd.slot = -1;
        else edges[size_t(nodes[size_t(parent)].edges + nd.slot)].child = id;
        if (nd.edges >= 0) {
            const int first = int(edges.size());
            for (int s = 0; s < nd.count; ++s) {
                const Edge& edge = edges_[size_t(nd.edges + s)];
                if (nd.state == EXPANDED && edge.child >= 0) queue.emplace_back(edge.child, id);
                edges.push_back(edge);
                links.push_back(links_[size_t(nd.edges + s)]);
            }
            nd.edges = first;
        }
        nodes.push_back(nd);
    }
    nodes_.swap(nodes);
    edges_.swap(edges);
    links_.swap(links);
    frozen_.clear();
    if (memory_limit_) release_spares();  // the old arenas: no memory kept for the next copy
    return 0;
}

void Tree::release_spares() {
    std::vector<Node>().swap(spare_nodes_);
    EdgeArena().swap(spare_edges_);
    std::vector<Link>().swap(spare_links_);
}

size_t Tree::memory_bytes() const {
    return sizeof(Tree) + held(nodes_) + held(edges_) + held(links_) + held(spare_nodes_) +
           held(spare_edges_) + held(spare_links_) + held(frozen_) + held(pre_root_) +
           held(pre_root_keys_) + held(pre_root_reps_) + held(root_priors_) + held(only_) +
           allowed_.capacity() / 8 + held(noise_) + held(collided_) + held(scratch_) +
           held(path_) + held(positions_) +
           (gumbel_ ? sizeof(Gumbel) + held(gumbel_->base) + gumbel_->considered.capacity() / 8 +
                          held(gumbel_->schedule) + held(gumbel_->counts)
                    : 0);
}

bool Tree::room_for_walk() const {
    // a walk makes at most one node, with at most MAX_MOVES moves, and goes one ply deeper
    const size_t peak = memory_bytes() + growth(nodes_, 1) + growth(edges_, MAX_MOVES) +
                        growth(links_, MAX_MOVES) + growth(path_, 1) + growth(positions_, 1) +
                        growth(frozen_, MAX_MOVES) +  // search-contempt freezes a node's moves
                        (scratch_.capacity() < MAX_MOVES ? MAX_MOVES * sizeof(double) : 0);
    return peak <= memory_limit_;
}

void Tree::set_memory_limit(size_t bytes) {
    memory_limit_ = bytes;
    if (bytes) release_spares();
}

void Tree::prepare_root() {
    prepared_ = true;
    Node& root = nodes_[size_t(root_)];
    const Edge* E = edges_of(root_);
    root_priors_.assign(size_t(root.count), 0.0);
    for (int s = 0; s < root.count; ++s) root_priors_[size_t(s)] = E[s].prior;
    root_priors_set_ = true;
    restrict_root();
    if (root.proven) {
        // nothing will be searched: no noise (the reference draws none either)
    } else if (params_.gumbel) {
        auto g = std::make_unique<Gumbel>();
        const int n = root.count;
        g->base.resize(size_t(n));
        for (int s = 0; s < n; ++s) {
            double noise = (params_.gumbel_noise && int(noise_.size()) == n) ? noise_[size_t(s)] : 0.0;
            g->base[size_t(s)] = noise + std::log(std::max(double(E[s].prior), 1e-30));
        }
        std::vector<double> eligible = g->base;
        int candidates = n;
        if (!allowed_.empty()) {
            candidates = 0;
            for (int s = 0; s < n; ++s) {
                if (!allowed_[size_t(s)]) eligible[size_t(s)] = NEG_INF;
                else candidates += 1;
            }
        }
        g->m = std::min(params_.gumbel_m, candidates);
        std::vector<int> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            return -eligible[size_t(a)] < -eligible[size_t(b)];
        });
        g->considered.assign(size_t(n), false);
        for (int i = 0; i < g->m; ++i) g->considered[size_t(order[size_t(i)])] = true;
        int sims = std::isfinite(target_) ? int(target_) : params_.default_simulations;
        g->schedule = considered_visits(g->m, std::max(sims, 1));
        g->counts.assign(size_t(n), 0.0);
        gumbel_ = std::move(g);
    } else if (params_.root_noise && root.count > 1 && int(noise_.size()) == root.count) {
        const double eps = params_.dirichlet_epsilon;
        for (int s = 0; s < root.count; ++s)
            root_priors_[size_t(s)] = (1.0 - eps) * E[s].prior + eps * noise_[size_t(s)];
    }
    std::vector<double> visited;
    for (int s = 0; s < root.count; ++s)
        if (E[s].N > 0) visited.push_back(root_priors_[size_t(s)]);
    root.visited_p = pairwise_sum(visited.data(), visited.size());
}

void Tree::restrict_root() {
    Node& root = nodes_[size_t(root_)];
    Edge* E = edges_of(root_);
    Link* L = links_of(root_);
    if (!allowed_.empty()) {  // lift the previous search's restriction: the proofs' blocks
        root.has_block = false;
        for (int s = 0; s < root.count; ++s) {
            int ch = E[s].child;
            L[s].blocked = ch >= 0 && nodes_[size_t(ch)].proven > 0;
            root.has_block = root.has_block || L[s].blocked;
        }
        allowed_.clear();
    }
    if (only_.empty()) return;
    std::vector<bool> allowed(static_cast<size_t>(root.count));
    int count = 0;
    for (int s = 0; s < root.count; ++s) {
        allowed[size_t(s)] = std::find(only_.begin(), only_.end(), E[s].move) != only_.end();
        count += allowed[size_t(s)];
    }
    if (count == 0 || count == root.count) return;
    if (!root.has_block)
        for (int s = 0; s < root.count; ++s) L[s].blocked = false;
    root.has_block = true;
    for (int s = 0; s < root.count; ++s)
        if (!allowed[size_t(s)]) L[s].blocked = true;
    allowed_ = allowed;
}

bool Tree::allowed_all_blocked() const {
    const Node& root = nodes_[size_t(root_)];
    if (allowed_.empty() || !root.has_block) return false;
    const Link* L = links_of(root_);
    for (int s = 0; s < root.count; ++s)
        if (!L[s].blocked) return false;
    return true;
}

// -- Gumbel ------------------------------------------------------------------------------------

std::vector<double> Tree::completed_q(int node, const double* priors) const {
    // search/gumbel.py: completed_q with mixed_value
    const Node& nd = nodes_[size_t(node)];
    const Edge* E = edges_of(node);
    const int n = nd.count;
    std::vector<double> visits(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) visits[size_t(s)] = double(E[s].N);
    double mixed = nd.value;
    double total = pairwise_sum(visits.data(), visits.size());
    std::vector<double> p, pq;
    for (int s = 0; s < n; ++s) {
        if (E[s].N > 0) {
            p.push_back(priors[s]);
            pq.push_back(priors[s] * edge_q(E[s]));
        }
    }
    if (total > 0 && !p.empty()) {
        double mass = pairwise_sum(p.data(), p.size());
        if (mass > 0) {
            double weighted = pairwise_sum(pq.data(), pq.size()) / mass;
            mixed = (nd.value + total * weighted) / (1.0 + total);
        }
    }
    std::vector<double> completed(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) completed[size_t(s)] = E[s].N > 0 ? edge_q(E[s]) : mixed;
    if (params_.gumbel_rescale) {
        double low = *std::min_element(completed.begin(), completed.end());
        double high = *std::max_element(completed.begin(), completed.end());
        double span = std::max(high - low, 1e-8);
        for (double& v : completed) v = (v - low) / span;
    } else {
        for (double& v : completed) v = (std::min(std::max(v, -1.0), 1.0) + 1.0) * 0.5;
    }
    return completed;
}

std::vector<double> Tree::improved_policy(int node) const {
    const Node& nd = nodes_[size_t(node)];
    const Edge* E = edges_of(node);
    std::vector<double> priors(nd.count);
    double top = 0.0;  // visits.max(initial=0.0)
    for (int s = 0; s < nd.count; ++s) {
        priors[size_t(s)] = E[s].prior;
        top = std::max(top, double(E[s].N));
    }
    std::vector<double> q_hat = completed_q(node, priors.data());
    const double scale = (params_.c_visit + top) * params_.c_scale;
    std::vector<double> x(nd.count);
    for (int s = 0; s < nd.count; ++s)
        x[size_t(s)] = std::log(std::max(double(E[s].prior), 1e-30)) + scale * q_hat[size_t(s)];
    return softmax(x);
}

std::vector<double> Tree::gumbel_scores() const {
    const Node& root = nodes_[size_t(root_)];
    const Edge* E = edges_of(root_);
    const Link* L = links_of(root_);
    std::vector<double> priors(root.count);
    double top = NEG_INF;
    for (int s = 0; s < root.count; ++s) {
        priors[size_t(s)] = E[s].prior;
        top = std::max(top, double(E[s].N));
    }
    std::vector<double> q_hat = completed_q(root_, priors.data());
    const double scale = (params_.c_visit + top) * params_.c_scale;
    std::vector<double> scores(root.count);
    for (int s = 0; s < root.count; ++s) {
        scores[size_t(s)] = gumbel_->base[size_t(s)] + scale * q_hat[size_t(s)];
        if (!gumbel_->considered[size_t(s)]) scores[size_t(s)] = NEG_INF;
    }
    if (root.has_block) {
        std::vector<double> blocked = scores;
        bool any = false;
        for (int s = 0; s < root.count; ++s) {
            if (L[s].blocked) blocked[size_t(s)] += NEG_INF;
            any = any || std::isfinite(blocked[size_t(s)]);
        }
        if (any) scores = blocked;
    }
    return scores;
}

// Below the root a Gumbel search picks the move whose improved policy most exceeds its share
// of the node's visits (the paper's deterministic interior selection).
int Tree::gumbel_interior_slot(int node) const {
    const Node* nd = &nodes_[size_t(node)];
    std::vector<double> policy = improved_policy(node);
    const Edge* E = edges_of(node);
    const Link* L = links_of(node);
    double total = 0.0;
    {
        std::vector<double> visits(nd->count);
        for (int s = 0; s < nd->count; ++s) visits[size_t(s)] = double(E[s].N);
        total = pairwise_sum(visits.data(), visits.size());
    }
    std::vector<double> scores(nd->count);
    for (int s = 0; s < nd->count; ++s) {
        scores[size_t(s)] = policy[size_t(s)] - double(E[s].N) / (1.0 + total);
        if (nd->has_block && L[s].blocked) scores[size_t(s)] += NEG_INF;
    }
    return argmax(scores);
}

int Tree::gumbel_select() {
    Gumbel& g = *gumbel_;
    std::vector<double> scores = gumbel_scores();
    const int n = int(scores.size());
    double wanted;
    if (g.k < g.schedule.size()) {
        wanted = g.schedule[g.k];
    } else {  // past the budget (an unbounded search): keep halving between the best two
        std::vector<int> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return -scores[size_t(a)] < -scores[size_t(b)]; });
        wanted = g.counts[size_t(order[0])];
        if (n > 1) wanted = std::min(wanted, g.counts[size_t(order[1])]);
    }
    std::vector<bool> mask(static_cast<size_t>(n));
    bool any = false;
    for (int s = 0; s < n; ++s) {
        mask[size_t(s)] = g.counts[size_t(s)] == wanted && std::isfinite(scores[size_t(s)]);
        any = any || mask[size_t(s)];
    }
    if (!any) {
        double low = INF;
        for (int s = 0; s < n; ++s)
            if (std::isfinite(scores[size_t(s)])) low = std::min(low, g.counts[size_t(s)]);
        for (int s = 0; s < n; ++s)
            mask[size_t(s)] = std::isfinite(scores[size_t(s)]) && g.counts[size_t(s)] == low;
    }
    std::vector<double> masked(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) masked[size_t(s)] = mask[size_t(s)] ? scores[size_t(s)] : NEG_INF;
    int slot = argmax(masked);
    g.counts[size_t(slot)] += 1.0;
    g.k += 1;
    return slot;
}

int Tree::gumbel_final() const {
    const Gumbel& g = *gumbel_;
    std::vector<double> scores = gumbel_scores();
    const int n = int(scores.size());
    double most = NEG_INF;
    for (int s = 0; s < n; ++s)
        if (std::isfinite(scores[size_t(s)])) most = std::max(most, g.counts[size_t(s)]);
    std::vector<double> masked(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s)
        masked[size_t(s)] = (std::isfinite(scores[size_t(s)]) && g.counts[size_t(s)] == most)
                                ? scores[size_t(s)]
                                : NEG_INF;
    return argmax(masked);
}

// -- the game --------------------------------------------------------------------------------

void Tree::advance(Move move) {
    if (in_flight_) throw std::runtime_error("advance() while leaves are still being evaluated");
    const Node& root = nodes_[size_t(root_)];
    int child = -1;
    bool legal = false;
    if (root.state == EXPANDED && params_.reuse_tree) {
        const Edge* E = edges_of(root_);
        for (int s = 0; s < root.count; ++s) {
            if (E[s].move == move.raw) {
                child = E[s].child;
                legal = true;
                break;
            }
        }
    } else {
        Move moves[MAX_MOVES];
        int count = history_.current().legal_moves(moves);
        legal = std::find(moves, moves + count, move) != moves + count;
    }
    if (!legal) throw std::invalid_argument("illegal move " + move.uci());
    history_.push(move);
    int keep = (child >= 0 && nodes_[size_t(child)].state == EXPANDED) ? child : -1;
    new_root(keep);
}

Status Tree::root_status(int draw_repetitions, bool fifty_move_draw) const {
    Move moves[MAX_MOVES];
    return leaf_status(history_.current(), history_.repetitions(), draw_repetitions,
                       fifty_move_draw, moves);
}

// -- reading the search ---------------------------------------------------------------------

int Tree::winning_slot(int node) const {
    const Node& nd = nodes_[size_t(node)];
    if (nd.proven <= 0 || nd.state != EXPANDED) return -1;
    int best = -1;
    int best_plies = std::numeric_limits<int>::max();
    const Edge* E = edges_of(node);
    const Link* L = links_of(node);
    for (int s = 0; s < nd.count; ++s) {
        int ch = E[s].child;
        if (ch >= 0 && nodes_[size_t(ch)].proven < 0 && nodes_[size_t(ch)].plies < best_plies) {
            if (!nd.has_block || !L[s].blocked) {
                best = s;
                best_plies = nodes_[size_t(ch)].plies;
            }
        }
    }
    return best;
}

int Tree::best_child(int node) const {
    const Node& nd = nodes_[size_t(node)];
    if (nd.state != EXPANDED || nd.count == 0) return -1;
    int winning = winning_slot(node);
    if (winning >= 0) return winning;
    const Edge* E = edges_of(node);
    const Link* L = links_of(node);
    std::vector<double> visits(nd.count);
    for (int s = 0; s < nd.count; ++s) visits[size_t(s)] = double(E[s].N);
    bool any_open = false;
    if (nd.has_block)
        for (int s = 0; s < nd.count; ++s) any_open = any_open || !L[s].blocked;
    if (nd.has_block && any_open) {
        for (int s = 0; s < nd.count; ++s)
            if (L[s].blocked) visits[size_t(s)] = -1.0;
    } else if (nd.proven < 0) {  // every move loses: resist longest
        std::vector<double> plies(nd.count);
        for (int s = 0; s < nd.count; ++s)
            plies[size_t(s)] = E[s].child >= 0 ? nodes_[size_t(E[s].child)].plies : -1;
        return argmax(plies);
    }
    double best = *std::max_element(visits.begin(), visits.end());
    if (best <= 0) {  // nothing visited: the highest prior that is not blocked
        std::vector<double> p(nd.count);
        for (int s = 0; s < nd.count; ++s)
            p[size_t(s)] = visits[size_t(s)] < 0 ? -1.0 : selection_prior(node, s);
        return argmax(p);
    }
    int choice = -1;
    double choice_q = NEG_INF;
    for (int s = 0; s < nd.count; ++s) {
        if (visits[size_t(s)] != best) continue;
        double q = edge_q(E[s]);
        if (choice < 0 || q > choice_q) {
            choice = s;
            choice_q = q;
        }
    }
    return choice;
}

std::vector<int> Tree::ranked_slots(int node, bool restricted) const {
    const Node& nd = nodes_[size_t(node)];
    const Edge* E = edges_of(node);
    struct Rank {
        int group;
        double order, tie;
        int slot;
    };
    std::vector<Rank> ranked;
    for (int s = 0; s < nd.count; ++s) {
        if (restricted && !allowed_[size_t(s)]) continue;
        int ch = E[s].child;
        int proven = ch >= 0 ? nodes_[size_t(ch)].proven : 0;
        int plies = ch >= 0 ? nodes_[size_t(ch)].plies : 0;
        int group = proven < 0 ? 0 : proven > 0 ? 2 : 1;
        double order = proven < 0 ? plies : proven > 0 ? -plies : -double(E[s].N);
        double tie = E[s].N ? -edge_q(E[s]) : -selection_prior(node, s);
        ranked.push_back({group, order, tie, s});
    }
    std::sort(ranked.begin(), ranked.end(), [](const Rank& a, const Rank& b) {
        if (a.group != b.group) return a.group < b.group;
        if (a.order != b.order) return a.order < b.order;
        if (a.tie != b.tie) return a.tie < b.tie;
        return a.slot < b.slot;
    });
    std::vector<int> slots;
    for (const Rank& r : ranked) slots.push_back(r.slot);
    return slots;
}

int Tree::best_slot() const {
    const Node& root = nodes_[size_t(root_)];
    if (root.state != EXPANDED) return -1;
    int winning = winning_slot(root_);
    if (winning >= 0) return winning;
    if (allowed_all_blocked()) return ranked_slots(root_, !allowed_.empty())[0];
    if (gumbel_ && started_ > 0) return gumbel_final();
    return best_child(root_);
}

std::vector<uint16_t> Tree::pv(int node, int limit) const {
    std::vector<uint16_t> line;
    while (node >= 0 && nodes_[size_t(node)].state == EXPANDED && int(line.size()) < limit) {
        int slot = best_child(node);
        if (slot < 0) break;
        const Edge& edge = edges_of(node)[slot];
        line.push_back(edge.move);
        node = edge.child;
    }
    return line;
}

std::vector<double> Tree::policy() const {
    const Node& root = nodes_[size_t(root_)];
    if (params_.gumbel) return improved_policy(root_);
    const Edge* E = edges_of(root_);
    std::vector<double> visits(root.count);
    for (int s = 0; s < root.count; ++s) visits[size_t(s)] = double(E[s].N);
    double total = pairwise_sum(visits.data(), visits.size());
    if (total <= 0) {
        for (int s = 0; s < root.count; ++s) visits[size_t(s)] = selection_prior(root_, s);
        return visits;
    }
    for (double& v : visits) v = v / total;
    return visits;
}

void Tree::search_target(const std::vector<double>& policy, std::vector<int>& slots,
                         std::vector<float>& probs) const {
    const int n = nodes_[size_t(root_)].count;
    for (int s = 0; s < n; ++s) {
        if (policy[size_t(s)] > 0) {
            slots.push_back(s);
            probs.push_back(float(policy[size_t(s)]));
        }
    }
    float total = pairwise_sum_f(probs.data(), probs.size());
    for (float& p : probs) p = p / total;
}

double Tree::target_kl(double floor) const {
    if (nodes_[size_t(root_)].state != EXPANDED) return 0.0;
    std::vector<int> slots;
    std::vector<float> probs;
    search_target(policy(), slots, probs);
    // policy_kl's terms in its order and arithmetic (float64 of the float32 target and prior,
    // the prior floored, NumPy's pairwise sum), over the target moves with a share left
    const Edge* E = edges_of(root_);
    std::vector<double> terms;
    terms.reserve(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
        const double t = double(probs[i]);
        if (!(t > 0.0)) continue;
        const double q = std::max(double(E[slots[i]].prior), floor);
        terms.push_back(t * std::log(t / q));
    }
    if (terms.empty()) return 0.0;
    return std::max(pairwise_sum(terms.data(), terms.size()), 0.0);
}

ResultData Tree::result(int lines, bool with_pv) const {
    ResultData r;
    const Node& root = nodes_[size_t(root_)];
    if (with_pv) r.pv = pv(root_, 64);
    if (root.state == EXPANDED) {
        const Edge* E = edges_of(root_);
        const Link* L = links_of(root_);
        const int n = root.count;
        r.moves.resize(size_t(n));
        r.visits.resize(size_t(n));
        r.q.resize(size_t(n));
        for (int s = 0; s < n; ++s) {
            r.moves[size_t(s)] = E[s].move;
            r.visits[size_t(s)] = double(E[s].N);
            r.q[size_t(s)] = E[s].N > 0 ? edge_q(E[s]) : std::numeric_limits<double>::quiet_NaN();
            int ch = E[s].child;
            if (ch >= 0 && nodes_[size_t(ch)].proven) r.q[size_t(s)] = -nodes_[size_t(ch)].proven;
        }
        r.policy = policy();
        std::vector<int> slots;
        search_target(r.policy, slots, r.target_probs);
        r.target_indices.reserve(slots.size());
        for (int s : slots) r.target_indices.push_back(L[s].index);
        const int best = best_slot();
        if (best >= 0) r.best_move = E[best].move;
        if (best >= 0 && lines >= 1) {
            std::vector<int> slots = {best};
            if (lines > 1) {
                for (int s : ranked_slots(root_, !allowed_.empty())) {
                    if (int(slots.size()) >= lines) break;
                    if (s != best) slots.push_back(s);
                }
            }
            for (int slot : slots) {
                RootLineData line;
                line.move = E[slot].move;
                line.visits = double(E[slot].N);
                line.q = r.q[size_t(slot)];
                int ch = E[slot].child;
                if (!r.pv.empty() && r.pv[0] == line.move) {
                    line.pv = r.pv;
                } else {
                    line.pv = {line.move};
                    if (ch >= 0) {
                        std::vector<uint16_t> rest = pv(ch, 63);
                        line.pv.insert(line.pv.end(), rest.begin(), rest.end());
                    }
                }
                if (ch >= 0) {
                    const Node& c = nodes_[size_t(ch)];
                    if (c.proven) line.mate_in = -c.proven * (c.plies + 1);
                    else if (c.state == EXPANDED && !std::isnan(c.draw)) line.draw = c.draw;
                }
                r.lines.push_back(std::move(line));
            }
        }
    }
    r.value = node_q(root_);
    if (root.proven && root.state != TERMINAL) r.mate_in = root.proven * root.plies;
    r.nodes = root.n;
    r.depth = max_depth_;
    r.simulations = started_;
    return r;
}

std::pair<int, double> Tree::leader() const {
    const Node& root = nodes_[size_t(root_)];
    if (root.state != EXPANDED) return {-1, 0.0};
    const Edge* E = edges_of(root_);
    if (root.count == 1) return {0, INF};
    int first = 0;
    for (int s = 1; s < root.count; ++s)
        if (E[s].N > E[first].N) first = s;
    uint32_t second = 0;
    for (int s = 0; s < root.count; ++s)
        if (s != first) second = std::max(second, E[s].N);
    return {first, double(E[first].N) - double(second)};
}

std::vector<uint16_t> Tree::root_moves() const {
    const Node& root = nodes_[size_t(root_)];
    std::vector<uint16_t> moves;
    for (int s = 0; root.edges >= 0 && s < root.count; ++s) moves.push_back(links_of(root_)[s].move);
    return moves;
}

void Tree::release() {
    if (in_flight_) throw std::runtime_error("release() while leaves are still being evaluated");
    for (auto* arena : {&nodes_, &spare_nodes_}) std::vector<Node>().swap(*arena);
    for (auto* arena : {&edges_, &spare_edges_}) EdgeArena().swap(*arena);
    for (auto* arena : {&links_, &spare_links_}) std::vector<Link>().swap(*arena);
    std::vector<double>().swap(frozen_);
    new_root(-1);
}

std::vector<double> Tree::choice_visits() const {
    const Node& root = nodes_[size_t(root_)];
    std::vector<double> visits;
    if (root.state != EXPANDED) return visits;
    const Edge* E = edges_of(root_);
    const Link* L = links_of(root_);
    bool any_open = false;
    for (int s = 0; s < root.count; ++s) {
        visits.push_back(double(E[s].N));
        any_open = any_open || !(root.has_block && L[s].blocked);
    }
    if (root.has_block && any_open)
        for (int s = 0; s < root.count; ++s)
            if (L[s].blocked) visits[size_t(s)] = 0.0;
    return visits;
}

}  // namespace fz
