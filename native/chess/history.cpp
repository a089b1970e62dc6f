// The positions of one game with their repetition counts (chess/history.py's GameHistory).
#include <algorithm>
#include <cstring>

#include "chess/position.h"

namespace fz {

History::History(const Position& root) {
    positions_.reserve(64);
    reps_.reserve(64);
    positions_.push_back(root);
    reps_.push_back(0);
    counts_[root.key] = 1;
    filter_[root.key & FILTER] += 1;
}

void History::push(Move move) {
    positions_.push_back(positions_.back().after(move));
    int& seen = counts_[positions_.back().key];
    reps_.push_back(uint8_t(std::min(seen, 2)));
    ++seen;
    filter_[positions_.back().key & FILTER] += 1;
}

bool History::pop() {
    if (positions_.size() <= 1) return false;
    auto found = counts_.find(positions_.back().key);
    if (--found->second == 0) counts_.erase(found);
    filter_[positions_.back().key & FILTER] -= 1;
    positions_.pop_back();
    reps_.pop_back();
    return true;
}

int History::count(uint64_t key) const {
    if (filter_[key & FILTER] == 0) return 0;
    auto found = counts_.find(key);
    return found == counts_.end() ? 0 : found->second;
}

void History::frames(uint64_t* out, int n) const {
    const int size = int(positions_.size());
    for (int i = 0; i < n; ++i, out += FRAME_WORDS) {
        if (i < size) positions_[size - 1 - i].frame(out, reps_[size - 1 - i]);
        else std::memset(out, 0, FRAME_WORDS * sizeof(uint64_t));
    }
}

}  // namespace fz
