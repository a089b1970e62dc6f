// frugalzero._native: the Python face of the native core. Each area binds itself.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_chess(nb::module_& m);
void bind_search(nb::module_& m);

NB_MODULE(_native, m) {
    m.doc() = "frugalzero's native core: chess rules, search tree and network inputs in C++";
    bind_chess(m);
    bind_search(m);
}
