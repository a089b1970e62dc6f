// Python bindings of the chess core (native/chess): positions, legal moves, frames, perft.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_chess(nb::module_& m) { (void)m; }
