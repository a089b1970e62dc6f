// The search's knobs, declared once. FZ_SEARCH_PARAMS lists each as X(type, name, default);
// the struct below, the binding's attributes and SearchParams.fields() are generated from it.
// frugalzero.search.native.search_params copies every field listed here from the SearchConfig
// field of the same name (or the one its NATIVE_FROM names), and tests/test_search_seam.py
// fails when the two sides disagree on a name, a type or a default.
#pragma once

#include <limits>

// clang-format off
#define FZ_SEARCH_PARAMS(X)                                                                  \
    X(double, c_init, 1.25)                                                                  \
    X(double, c_base, 19652.0)                                                               \
    X(bool, fpu_absolute, false)  /* SearchConfig.fpu_mode: "absolute" (true), "reduction" */ \
    X(double, fpu_value, 0.25)                                                               \
    X(double, policy_temperature, 1.0)                                                       \
    X(bool, root_noise, true)                                                                \
    X(double, dirichlet_epsilon, 0.25)                                                       \
    X(double, nscl, std::numeric_limits<double>::infinity())                                 \
    X(bool, gumbel, false)                                                                   \
    X(int, gumbel_m, 16)                                                                     \
    X(bool, gumbel_noise, true)                                                              \
    X(double, c_visit, 50.0)                                                                 \
    X(double, c_scale, 1.0)                                                                  \
    X(bool, gumbel_rescale, false)                                                           \
    X(double, virtual_loss, 1.0)                                                             \
    X(int, leaves_per_gather, 1)                                                             \
    X(int, collisions, 0)                                                                    \
    X(int, draw_repetitions, 3)                                                              \
    X(bool, fifty_move_draw, true)                                                           \
    X(bool, solver, true)                                                                    \
    X(bool, reuse_tree, true)                                                                \
    X(int, default_simulations, 800)  /* SearchConfig.simulations: a Gumbel schedule's      \
                                         budget when a search is unbounded */
// clang-format on

namespace fz {

struct SearchParams {
#define FZ_PARAM_MEMBER(type, name, value) type name = value;
    FZ_SEARCH_PARAMS(FZ_PARAM_MEMBER)
#undef FZ_PARAM_MEMBER
};

}  // namespace fz
