// The leaves of many trees gathered for one network batch, and the evaluations they get back.
//
// A batch is filled by Tree::gather (one tree after another) and read twice: by the network
// (the rows: packed frames, meta, padded policy indices: exactly what the inference process
// takes) and by apply_batch, which hands each leaf its evaluation in gather order, the rows'
// from the network and the others' from the evaluation cache. Cached evaluations are copied
// into the batch when it is gathered, so a cache that evicts them meanwhile changes nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "chess/position.h"

namespace fz {

struct InputKey {
    uint64_t a = 0, b = 0;
    bool operator==(const InputKey& other) const { return a == other.a && b == other.b; }
};

// A 128-bit fingerprint of everything the input planes depend on: the eight history steps'
// positions, by Zobrist key (0 before the game's start) with their repetition counts, and the
// meta. The evaluation cache's key, as Python's NetInput.key is (frames bytes, meta): a Zobrist
// key fixes the pieces (and a little more: positions differing only in en passant get two
// entries where Python's cache has one, which costs a network call, never a wrong answer).
InputKey input_key(const uint64_t keys[HISTORY], const int reps[HISTORY], const int64_t* meta);

// The network's answers by input key: a set-associative table (sets of WAYS entries, the least
// recently used of a set replaced), flat in memory, so a lookup touches a few cache lines
// instead of a hash node, a list node and a vector. Positions with more than SLOT legal moves
// (none in real games, where 218 is the most and 60 rare) are not kept.
class EvalCache {
public:
    static constexpr int WAYS = 4;
    static constexpr int SLOT = 80;

    struct Hit {
        const float* logits;
        int count;
        float value;
        const float* wdl;  // nullptr without a WDL head
    };

    explicit EvalCache(size_t capacity);
    ~EvalCache();
    EvalCache(const EvalCache&) = delete;
    EvalCache& operator=(const EvalCache&) = delete;

    // Start fetching the set ``key`` belongs to (its headers), for a get or put a little later.
    void prefetch(const InputKey& key) const {
        if (sets_ == 0) return;
        const Header* set = &headers_[(key.a % sets_) * WAYS];
        __builtin_prefetch(set);
        __builtin_prefetch(set + WAYS - 1);
    }
    // The entry for ``key`` (marked recently used); false when there is none.
    bool get(const InputKey& key, Hit& hit);
    void put(const InputKey& key, const float* logits, int count, float value, const float* wdl);
    void resize(size_t capacity);  // starts empty
    void clear();
    size_t size() const { return used_; }
    size_t capacity() const { return capacity_; }
    // the bytes its tables take when full (calloc'ed: an empty entry's page costs nothing)
    size_t memory_bytes() const { return sets_ * WAYS * (sizeof(Header) + sizeof(Payload)); }
    uint64_t hits = 0, misses = 0;

private:
    struct Header {
        InputKey key;
        uint32_t stamp;  // when last used; 0: empty
        uint16_t count;
        uint8_t has_wdl;
    };
    struct Payload {
        float value;
        float wdl[3];
        float logits[SLOT];
    };
    void allocate();
    void release();
    size_t capacity_ = 0, sets_ = 0, used_ = 0;
    uint32_t clock_ = 0;
    Header* headers_ = nullptr;  // calloc'ed: untouched pages cost no memory
    Payload* payloads_ = nullptr;
};

struct Leaf {
    int32_t tree = 0;    // index in the caller's list of trees
    int32_t node = 0;    // node id in that tree
    int32_t row = -1;    // network row, or -1 when cached
    int32_t cached = 0;  // offset of the cached logits in cached_logits
    int32_t count = 0;   // legal moves
    float value = 0.0f;
    float wdl[3] = {0.0f, 0.0f, 0.0f};
    bool has_wdl = false;
};

class LeafBatch {
public:
    void clear();
    // A gathered leaf that ``cache`` has the answer for (copied here); false when it has
    // not (or there is no cache), and the leaf then goes to the network with add_row.
    bool add_cached(int tree, int node, int count, const InputKey& key, EvalCache* cache);
    // The current position of ``history`` (its legal moves in python-chess's order), answered by
    // the cache or as a row: a tree's root, or a position outside any tree (ε-Explore's walk).
    void add_history(int tree, int node, const History& history, EvalCache* cache);
    // A gathered leaf for the network: its input, written by the tree.
    void add_row(int tree, int node, const uint64_t* frames, const int64_t* meta,
                 const Move* moves, const int16_t* indices, int count, const InputKey& key);

    int leaves() const { return int(leaves_.size()); }
    int rows() const { return int(row_leaf_.size()); }
    int width() const { return width_; }
    const Leaf& leaf(int i) const { return leaves_[size_t(i)]; }
    const std::vector<uint64_t>& frames() const { return frames_; }  // rows x 8 x 13
    const std::vector<int64_t>& meta() const { return meta_; }       // rows x 7
    // rows x width, zero-padded, and the rows' counts
    void padded_indices(int16_t* out, int width) const;
    const std::vector<int32_t>& counts() const { return counts_; }
    const std::vector<int32_t>& offsets() const { return offsets_; }  // into moves / indices
    const std::vector<uint16_t>& moves() const { return moves_; }
    const std::vector<int16_t>& indices() const { return indices_; }
    const std::vector<InputKey>& keys() const { return keys_; }
    const float* cached_logits(const Leaf& leaf) const { return &cached_logits_[size_t(leaf.cached)]; }
    int row_leaf(int row) const { return row_leaf_[size_t(row)]; }

private:
    std::vector<Leaf> leaves_;
    std::vector<int32_t> row_leaf_;
    std::vector<uint64_t> frames_;
    std::vector<int64_t> meta_;
    std::vector<uint16_t> moves_;
    std::vector<int16_t> indices_;
    std::vector<int32_t> offsets_;
    std::vector<int32_t> counts_;
    std::vector<InputKey> keys_;
    std::vector<float> cached_logits_;
    int width_ = 0;
};

}  // namespace fz
