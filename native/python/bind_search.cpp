// Python bindings of the search core (native/search): trees and batched gather / apply.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_search(nb::module_& m) { (void)m; }
