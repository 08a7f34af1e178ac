// Figure 6: correlation across heads between the mean recall R(r_min, N) and the sink cosine
// ρ0, with a percentile bootstrap over documents (deterministic, seeded), from the per-document
// arrays that `attngeo extract` writes (per_doc.safetensors).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::compare {

struct PerDocArrays {
    int docs = 0, layers = 0, heads = 0;
    std::vector<int> sizes;           // [S] the N grid
    std::vector<float> P, R;          // [docs, layers, heads, S] row-major
    std::vector<float> rho0, lambda;  // [docs, layers, heads] row-major
};

// Reads per_doc.safetensors: float32 "P", "R" [D, L, H, S], "rho0", "lambda" [D, L, H] and
// int64 "N" [S]. A missing tensor, wrong dtype or inconsistent shape is an InputError naming
// the file, the tensor and both shapes.
PerDocArrays read_per_doc(const std::string& path);

struct CorrelationRow {
    int N = 0;
    int heads = 0;                          // layers · heads
    double corr = 0, ci_lo = 0, ci_hi = 0;  // NaN when undefined (a variance is 0)
    int replicates = 0;
};

// Per N: Pearson correlation across heads of x_h = mean_d R[d, h, N] and y_h = mean_d ρ0[d, h],
// with a 95% percentile interval over `replicates` bootstrap resamples of the documents (the
// same resample for every N within a replicate). Replicate r draws from SplitMix64 seeded by
// a hash of (seed, r) with unbiased bounded integers; the interval is the 2.5 and 97.5 percentiles
// with linear interpolation between order statistics (Hyndman–Fan type 7, as R and NumPy default).
// replicates = 0, or any replicate whose correlation is undefined, gives NaN intervals.
// `threads` (≤ 0: all) evaluates replicates in parallel; the result does not depend on it.
std::vector<CorrelationRow> recall_rho0_correlation(const PerDocArrays& arrays, int replicates,
                                                    std::uint64_t seed, int threads = 1);

// Pearson correlation of two equally long series; NaN when either variance is 0 or n < 2.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// corr_rho0.csv: N,heads,corr,ci_lo,ci_hi,replicates.
void write_correlation_csv(const std::vector<CorrelationRow>& rows, const std::string& path);

}  // namespace attngeo::compare
