#include "search/batch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fz {

namespace {

// 64 x 64 -> 128-bit multiply, folded (the mixing step of wyhash)
inline uint64_t mix(uint64_t a, uint64_t b) {
    __uint128_t r = __uint128_t(a) * b;
    return uint64_t(r) ^ uint64_t(r >> 64);
}

// two words a multiply, as wyhash does
uint64_t hash_words(const uint64_t* words, size_t n, uint64_t seed) {
    constexpr uint64_t P0 = 0xa0761d6478bd642fULL, P1 = 0xe7037ed1a0b428dbULL;
    uint64_t h = seed ^ P0;
    size_t i = 0;
    for (; i + 1 < n; i += 2) h = mix(words[i] ^ P1 ^ h, words[i + 1] ^ P0 ^ i);
    if (i < n) h = mix(words[i] ^ P1 ^ h, P0 ^ i);
    return mix(h ^ P0, P1 ^ n);
}

}  // namespace

InputKey input_key(const uint64_t keys[HISTORY], const int reps[HISTORY], const int64_t* meta) {
    uint64_t words[2 * HISTORY + META_FIELDS];
    for (int i = 0; i < HISTORY; ++i) {
        words[2 * i] = keys[i];
        words[2 * i + 1] = uint64_t(std::min(reps[i], 2));
    }
    std::memcpy(words + 2 * HISTORY, meta, sizeof(int64_t) * META_FIELDS);
    const size_t n = 2 * HISTORY + META_FIELDS;
    return {hash_words(words, n, 0x243f6a8885a308d3ULL), hash_words(words, n, 0x13198a2e03707344ULL)};
}

// -- EvalCache -----------------------------------------------------------------------------

EvalCache::EvalCache(size_t capacity) : capacity_(capacity) { allocate(); }

EvalCache::~EvalCache() { release(); }

void EvalCache::allocate() {
    sets_ = (capacity_ + WAYS - 1) / WAYS;
    used_ = 0;
    clock_ = 0;
    if (sets_ == 0) return;
    headers_ = static_cast<Header*>(std::calloc(sets_ * WAYS, sizeof(Header)));
    payloads_ = static_cast<Payload*>(std::calloc(sets_ * WAYS, sizeof(Payload)));
    if (!headers_ || !payloads_) {
        release();
        throw std::bad_alloc();
    }
}

void EvalCache::release() {
    std::free(headers_);
    std::free(payloads_);
    headers_ = nullptr;
    payloads_ = nullptr;
}

bool EvalCache::get(const InputKey& key, Hit& hit) {
    if (sets_ == 0) {
        misses += 1;
        return false;
    }
    const size_t first = (key.a % sets_) * WAYS;
    for (size_t i = first; i < first + WAYS; ++i) {
        Header& h = headers_[i];
        if (h.stamp && h.key == key) {
            h.stamp = ++clock_;
            const Payload& p = payloads_[i];
            hit = {p.logits, h.count, p.value, h.has_wdl ? p.wdl : nullptr};
            hits += 1;
            return true;
        }
    }
    misses += 1;
    return false;
}

void EvalCache::put(const InputKey& key, const float* logits, int count, float value,
                    const float* wdl) {
    if (sets_ == 0 || count > SLOT || count < 0) return;
    const size_t first = (key.a % sets_) * WAYS;
    size_t slot = first;
    for (size_t i = first; i < first + WAYS; ++i) {
        const Header& h = headers_[i];
        if (h.stamp && h.key == key) {  // already there: refresh it
            slot = i;
            break;
        }
        if (h.stamp < headers_[slot].stamp) slot = i;  // an empty one (0) or the oldest
    }
    Header& h = headers_[slot];
    if (!h.stamp) used_ += 1;
    if (++clock_ == 0) {  // the clock wrapped (after 4 billion uses): restart the ages
        for (size_t i = 0; i < sets_ * WAYS; ++i)
            if (headers_[i].stamp) headers_[i].stamp = 1;
        clock_ = 2;
    }
    h.key = key;
    h.stamp = clock_;
    h.count = uint16_t(count);
    h.has_wdl = wdl != nullptr;
    Payload& p = payloads_[slot];
    p.value = value;
    if (wdl) std::copy_n(wdl, 3, p.wdl);
    std::copy_n(logits, count, p.logits);
}

void EvalCache::resize(size_t capacity) {
    release();
    capacity_ = capacity;
    allocate();
}

void EvalCache::clear() { resize(capacity_); }

// -- LeafBatch -----------------------------------------------------------------------------

void LeafBatch::clear() {
    leaves_.clear();
    row_leaf_.clear();
    frames_.clear();
    meta_.clear();
    moves_.clear();
    indices_.clear();
    offsets_.clear();
    counts_.clear();
    keys_.clear();
    cached_logits_.clear();
    width_ = 0;
}

bool LeafBatch::add_cached(int tree, int node, int count, const InputKey& key, EvalCache* cache) {
    EvalCache::Hit hit;
    if (!cache || !cache->get(key, hit) || hit.count != count) return false;
    Leaf leaf;
    leaf.tree = tree;
    leaf.node = node;
    leaf.count = count;
    leaf.cached = int(cached_logits_.size());
    cached_logits_.insert(cached_logits_.end(), hit.logits, hit.logits + count);
    leaf.value = hit.value;
    leaf.has_wdl = hit.wdl != nullptr;
    if (hit.wdl) std::copy_n(hit.wdl, 3, leaf.wdl);
    leaves_.push_back(leaf);
    return true;
}

void LeafBatch::add_row(int tree, int node, const uint64_t* frames, const int64_t* meta,
                        const Move* moves, const int16_t* indices, int count, const InputKey& key) {
    Leaf leaf;
    leaf.tree = tree;
    leaf.node = node;
    leaf.count = count;
    leaf.row = int(row_leaf_.size());
    row_leaf_.push_back(int(leaves_.size()));
    leaves_.push_back(leaf);
    frames_.insert(frames_.end(), frames, frames + HISTORY * FRAME_WORDS);
    meta_.insert(meta_.end(), meta, meta + META_FIELDS);
    offsets_.push_back(int(moves_.size()));
    counts_.push_back(count);
    for (int i = 0; i < count; ++i) moves_.push_back(moves[i].raw);
    indices_.insert(indices_.end(), indices, indices + count);
    keys_.push_back(key);
    width_ = std::max(width_, count);
}

void LeafBatch::add_history(int tree, int node, const History& history, EvalCache* cache) {
    const Position& position = history.current();
    int64_t meta[META_FIELDS];
    position.meta(meta);
    uint64_t keys[HISTORY] = {};
    int reps[HISTORY] = {};
    const int size = history.size();
    for (int i = 0; i < HISTORY && i < size; ++i) {
        keys[i] = history.at(size - 1 - i).key;
        reps[i] = history.repetitions_at(size - 1 - i);
    }
    Move moves[MAX_MOVES];
    const int count = position.legal_moves(moves);
    const InputKey key = input_key(keys, reps, meta);
    if (add_cached(tree, node, count, key, cache)) return;
    uint64_t frames[HISTORY * FRAME_WORDS] = {};
    history.frames(frames, HISTORY);
    int16_t indices[MAX_MOVES];
    for (int i = 0; i < count; ++i) indices[i] = int16_t(policy_index(moves[i], position.turn));
    add_row(tree, node, frames, meta, moves, indices, count, key);
}

void LeafBatch::padded_indices(int16_t* out, int width) const {
    const size_t rows = row_leaf_.size();
    std::fill(out, out + rows * size_t(width), int16_t(0));
    for (size_t r = 0; r < rows; ++r)
        std::copy_n(&indices_[size_t(offsets_[r])], std::min(counts_[r], width), out + r * size_t(width));
}

}  // namespace fz
