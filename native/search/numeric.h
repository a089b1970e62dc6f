// Floating-point helpers that add numbers in exactly the order NumPy does, so the native tree
// and the Python reference (tests/oracle/tree.py) agree to the last bit wherever the Python
// side sums an array: the equivalence tests compare visit counts move after move, and one ulp
// can turn a tie.
#pragma once

#include <cstddef>

namespace fz {

// numpy's pairwise summation (np.add.reduce over a contiguous float64 array): blocks of up to
// 128 summed with eight accumulators, larger arrays split in halves at a multiple of 8.
inline double pairwise_sum(const double* a, std::size_t n) {
    if (n < 8) {
        double res = 0.0;
        for (std::size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        std::size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

}  // namespace fz
