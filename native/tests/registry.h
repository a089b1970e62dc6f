// A small test registry for the native test driver (native_tests): each test file registers
// named checks with FZ_TEST; main.cpp runs all of them, or those named on the command line,
// and exits non-zero when a check failed. Fuzz passes are tests too: they draw from
// Context's random generator and read the corpus of positions given with --corpus.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace fz::test {

struct Context {
    std::vector<std::string> corpus;  // lines of the --corpus file (empty without one)
    uint64_t seed = 1;                // --seed
    int scale = 1;                    // --scale: multiplies the fuzz passes' iterations
    int failures = 0;                 // checks failed in the current test

    // A reproducible stream of random numbers (splitmix64) for the fuzz passes.
    uint64_t next() {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    int below(int n) { return n > 0 ? int(next() % uint64_t(n)) : 0; }
};

using TestFunction = std::function<void(Context&)>;

struct Test {
    std::string name;
    TestFunction run;
};

std::vector<Test>& registry();

struct Registration {
    Registration(const char* name, TestFunction run) { registry().push_back({name, std::move(run)}); }
};

// Reports a failed check; at most a few lines per test so a broken build stays readable.
void report(Context& ctx, const char* file, int line, const std::string& what);

}  // namespace fz::test

#define FZ_CONCAT_(a, b) a##b
#define FZ_CONCAT(a, b) FZ_CONCAT_(a, b)
#define FZ_TEST(name)                                                                   \
    static void FZ_CONCAT(fz_test_, name)(fz::test::Context&);                          \
    static fz::test::Registration FZ_CONCAT(fz_registration_, name)(#name,              \
                                                                   FZ_CONCAT(fz_test_, name)); \
    static void FZ_CONCAT(fz_test_, name)([[maybe_unused]] fz::test::Context & ctx)

// CHECK(condition) and CHECK_MSG(condition, message): record a failure and go on.
#define CHECK_MSG(condition, message)                                                    \
    do {                                                                                 \
        if (!(condition))                                                                \
            fz::test::report(ctx, __FILE__, __LINE__, std::string(#condition) + " " + (message)); \
    } while (0)
#define CHECK(condition) CHECK_MSG(condition, std::string())
