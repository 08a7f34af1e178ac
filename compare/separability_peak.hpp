// Claim C4, "a small-N regime of strongest non-trivial separability": where over N the mean
// F-score over heads and documents rises furthest above what N alone guarantees, N = 1 (an
// identity: F = 1) and N = n (a convention) left out, with a document-bootstrap interval of that
// N (docs/design.md §7). "Non-trivial": P(r_max, N) ≥ N/n always, so F(r_max, N) ≥ f(N/n) with
// f(x) = 2x/(1 + x), a floor that reaches 1 at N = n; the peak is taken of the share of the range
// above the floor, (F − floor)/(1 − floor). F(r_min, N) has no floor above 0.
#pragma once
#include <array>
#include <cstdint>
#include <limits>

#include "compare/correlation.hpp"

namespace attngeo::compare {

struct SeparabilityPeak {
    const char* metric = "";  // "F(r_max)" or "F(r_min)"
    int N = 0;  // argmax over 2 ≤ N < n of the grid of the share above the floor; 0: none
    double share = std::numeric_limits<double>::quiet_NaN();  // (F − floor)/(1 − floor) there
    double value = std::numeric_limits<double>::quiet_NaN();  // the mean F there
    // The 2.5 and 97.5 percentiles (Hyndman–Fan type 7) of the argmax over resamples of the
    // documents; NaN without a bootstrap (fewer than 2 documents, no replicates, no N).
    double lo = std::numeric_limits<double>::quiet_NaN();
    double hi = std::numeric_limits<double>::quiet_NaN();
    int replicates = 0;
};

// The deterministic floor of the metric's F at N of n tokens: f(N/n) for "F(r_max)", 0 for
// "F(r_min)".
double separability_floor(const char* metric, int N, int context);

// F(r_max, N) and F(r_min, N) of `arrays` (Fmax, Fmin [docs, layers, heads, S]) averaged over
// every query head and document; `context` is n. Resamples are compare/bootstrap.hpp's, keyed
// by `seed`; the result does not depend on `threads`.
std::array<SeparabilityPeak, 2> separability_peaks(const PerDocArrays& arrays, int context,
                                                   int replicates, std::uint64_t seed, int threads);

}  // namespace attngeo::compare
