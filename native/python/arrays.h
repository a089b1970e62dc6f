// What both binding files need: NumPy arrays that own a copy of C++ values, and the endings'
// names as chess/rules.py spells them.
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "chess/position.h"

namespace fz::py {

namespace nb = nanobind;

template <class T>
using Array = nb::ndarray<nb::numpy, T>;

// A NumPy array owning a copy of ``values``, shaped ``shape`` (default: one dimension).
template <class T>
Array<T> to_numpy(std::vector<T> values, std::initializer_list<size_t> shape) {
    auto* heap = new std::vector<T>(std::move(values));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
    return Array<T>(heap->data(), shape, owner);
}

template <class T>
Array<T> to_numpy(std::vector<T> values) {
    const size_t n = values.size();
    return to_numpy(std::move(values), {n});
}

template <class T>
Array<T> to_numpy(const T* values, size_t n) {
    return to_numpy(std::vector<T>(values, values + n));
}

// chess/rules.py's names of the endings; nullopt while the game goes on
inline std::optional<std::string> ending_name(Ending ending) {
    switch (ending) {
        case Ending::CHECKMATE: return "checkmate";
        case Ending::STALEMATE: return "stalemate";
        case Ending::REPETITION: return "repetition";
        case Ending::FIFTY_MOVES: return "fifty-move rule";
        case Ending::MATERIAL: return "insufficient material";
        case Ending::NONE: break;
    }
    return std::nullopt;
}

}  // namespace fz::py
