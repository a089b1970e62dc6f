// native_tests: runs the registered C++ tests and fuzz passes (registry.h).
//
//   native_tests [--corpus FILE] [--seed N] [--scale K] [--list] [TEST ...]
//
// Prints one line per test and exits with 1 if any check failed (2 on bad arguments).
// tests/test_native_sanitizers.py builds it with AddressSanitizer and UBSan and runs it on a
// corpus of positions python-chess generated.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "registry.h"

namespace fz::test {

std::vector<Test>& registry() {
    static std::vector<Test> tests;
    return tests;
}

void report(Context& ctx, const char* file, int line, const std::string& what) {
    if (++ctx.failures <= 5) std::fprintf(stderr, "  FAILED %s:%d: %s\n", file, line, what.c_str());
}

}  // namespace fz::test

namespace {

// What this build checks at run time: tests/test_native_sanitizers.py insists on both.
void print_build() {
#if defined(__SANITIZE_ADDRESS__)
    const bool address = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    const bool address = true;
#else
    const bool address = false;
#endif
#else
    const bool address = false;
#endif
#if defined(FZ_SANITIZE)
    const bool undefined = true;
#else
    const bool undefined = false;
#endif
    std::printf("sanitizers: address %s, undefined %s\n", address ? "on" : "off",
                undefined ? "on" : "off");
    std::fflush(stdout);
}

// --probe address|undefined: a fault the sanitizer must report (the Python test checks that
// it does): a read past the end of a heap block, or a signed overflow.
int probe(const std::string& kind, int argc) {
    if (kind == "address") {
        volatile int past = argc + 5;  // 8 with the two arguments
        int* block = new int[8]();
        const int read = block[past];
        delete[] block;
        return read;
    }
    volatile int big = 2147483647;
    return big + argc;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace fz::test;
    if (argc == 3 && std::string(argv[1]) == "--probe") return probe(argv[2], argc) == 0 ? 0 : 3;
    print_build();
    Context base;
    std::set<std::string> wanted;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--corpus" && has_value) {
            std::ifstream in(argv[++i]);
            if (!in) {
                std::fprintf(stderr, "cannot read %s\n", argv[i]);
                return 2;
            }
            for (std::string line; std::getline(in, line);)
                if (!line.empty()) base.corpus.push_back(line);
        } else if ((arg == "--seed" || arg == "--scale") && has_value) {
            char* end = nullptr;
            const unsigned long long value = std::strtoull(argv[++i], &end, 10);
            if (!end || *end) {
                std::fprintf(stderr, "%s needs a number, not %s\n", arg.c_str(), argv[i]);
                return 2;
            }
            if (arg == "--seed") base.seed = value;
            else base.scale = int(std::clamp<unsigned long long>(value, 1, 1000));
        } else if (arg == "--list") {
            list = true;
        } else if (!arg.empty() && arg[0] != '-') {
            wanted.insert(arg);
        } else {
            std::fprintf(stderr, "usage: %s [--corpus FILE] [--seed N] [--scale K] [--list] [TEST ...]\n",
                         argv[0]);
            return 2;
        }
    }
    std::set<std::string> known;
    for (const Test& test : registry()) known.insert(test.name);
    for (const std::string& name : wanted)
        if (!known.count(name)) {
            std::fprintf(stderr, "no test named %s (see --list)\n", name.c_str());
            return 2;
        }
    int failed = 0, ran = 0;
    for (const Test& test : registry()) {
        if (list) {
            std::printf("%s\n", test.name.c_str());
            continue;
        }
        if (!wanted.empty() && !wanted.count(test.name)) continue;
        Context ctx = base;
        const auto start = std::chrono::steady_clock::now();
        test.run(ctx);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ++ran;
        if (ctx.failures) ++failed;
        std::printf("%-28s %s (%.2f s, %d failed checks)\n", test.name.c_str(),
                    ctx.failures ? "FAILED" : "ok", seconds, ctx.failures);
        std::fflush(stdout);
    }
    if (!list) std::printf("%d tests, %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
