// The search's knobs, as frugalzero.search.config.SearchConfig defines them (the Python side
// copies the dataclass into this struct; the defaults there are the documented ones).
#pragma once

#include <cmath>
#include <limits>

namespace fz {

struct SearchParams {
    double c_init = 1.25;
    double c_base = 19652.0;
    bool fpu_absolute = false;  // fpu_mode: "absolute" (true) or "reduction"
    double fpu_value = 0.25;
    double policy_temperature = 1.0;
    bool root_noise = true;
    double dirichlet_epsilon = 0.25;
    double nscl = std::numeric_limits<double>::infinity();
    bool gumbel = false;
    int gumbel_m = 16;
    bool gumbel_noise = true;
    double c_visit = 50.0;
    double c_scale = 1.0;
    bool gumbel_rescale = false;
    double virtual_loss = 1.0;
    int leaves_per_gather = 1;
    int collisions = 0;
    int draw_repetitions = 3;
    bool fifty_move_draw = true;
    bool solver = true;
    bool reuse_tree = true;
    int default_simulations = 800;  // a Gumbel schedule's budget when a search is unbounded
};

}  // namespace fz
