// Figure 6: correlation across heads between the mean recall R(r_min, N) and the sink cosine
// ρ0, with a percentile bootstrap over documents (deterministic, seeded), from the per-document
// arrays that `attngeo extract` writes (per_doc.safetensors).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/safetensors.hpp"

namespace attngeo::compare {

struct PerDocArrays {
    int docs = 0, layers = 0, heads = 0;
    std::vector<int> sizes;           // [S] the N grid
    std::vector<float> P, R;          // [docs, layers, heads, S] row-major
    std::vector<float> rho0, lambda;  // [docs, layers, heads] row-major
    // What the fit intervals refit.
    int max_lag = 0, context = 0;   // K and n of the two arrays below
    std::vector<float> cos_by_lag;  // [docs, layers, heads, K] mean cos at lags 1..K per document
    std::vector<float> alpha;       // [docs, layers, heads, n] α by position per document
    std::vector<float> C;           // [docs, layers, heads] median_{i≥1} ‖v_i‖ per document
    // What the claims' document bootstraps resample (docs/design.md §7 "The paper's claims"):
    // the per-document terms whose means are heads.csv's magnitudes, pr.csv's F and diag.csv's
    // cosines.
    std::vector<float> m_sink, m_last, m_rest;  // [docs, layers, heads] ‖α_0v_0‖, ‖α_{n−1}v_{n−1}‖,
                                                // ‖Σ_{0<i<n−1} α_iv_i‖
    std::vector<float> Fmax, Fmin;          // [docs, layers, heads, S] F(r_max,N), F(r_min,N)
    std::vector<float> cos_s_v0, cos_s_vL;  // [docs, layers, heads, S] cos(s(N), v_0),
                                            // cos(s(N), v_{n−1})
    // The attention-sink measures (docs/design.md §15; compare/sink_relations.hpp): NaN for a
    // window not measured, empty when the file has none.
    std::vector<float> sink_attention;  // [docs, layers, heads] α(0), mean attention on token 0
    std::vector<float> key_norm_ratio;  // [docs, layers, heads] ‖k_0‖ / median_{j≥1} ‖k_j‖
};

// Reads per_doc.safetensors: float32 "P", "R" [D, L, H, S], "rho0", "lambda" [D, L, H] and
// int64 "N" [S], "cos_by_lag" [D, L, H, K], "alpha" [D, L, H, n], "C" [D, L, H], "m_sink",
// "m_last", "m_rest" [D, L, H] and "Fmax", "Fmin", "cos_s_v0", "cos_s_vL" [D, L, H, S], all
// required; "sink_attention" and "key_norm_ratio" [D, L, H] where present. A missing tensor, wrong
// dtype or inconsistent shape is an InputError naming the file, the tensor and both shapes.
PerDocArrays read_per_doc(const std::string& path);

// The tensor `name` of `file` with this dtype and shape (−1: any extent); an InputError naming
// the file, the tensor and both shapes otherwise.
HostTensor fetch_tensor(const SafetensorsFile& file, const std::string& name, DType dtype,
                        const std::vector<std::int64_t>& expected_shape);

struct CorrelationRow {
    int N = 0;
    int heads = 0;                          // heads correlated: layers · heads / group
    double corr = 0, ci_lo = 0, ci_hi = 0;  // NaN when undefined (a variance is 0)
    int replicates = 0;                     // resamples drawn (0 with fewer than 2 documents)
    // Heads as the sample (the claim is about heads, not these documents): the interval
    // tanh(atanh r ± atanh c) with c the critical |r| of the max-|r| permutation test over the
    // N (compare/max_correlation_test.hpp), so that the intervals of every N hold together and
    // one excludes 0 exactly when that exact test rejects there.
    double head_lo = 0, head_hi = 0;
    // The partial correlation given the layer (each unit's x and y centred on its layer's
    // means: layer 0 holds most sinks) and its interval likewise, y permuted within layers.
    double partial = 0, partial_lo = 0, partial_hi = 0;
    // The family's critical |r| (the same on every row): plain and partial.
    double head_critical = 1, partial_critical = 1;
};

// The head-level family of recall_rho0_correlation's rows: how many N it is simultaneous over,
// the permutations drawn and the two critical |r|.
struct HeadLevelFamily {
    int family = 0;
    int permutations = 0;
    double critical = 1, partial_critical = 1;
};
HeadLevelFamily head_level_family(const std::vector<CorrelationRow>& rows);

// Pearson's correlation of x and y after centring both on the means of their group (`group_of`
// [n], e.g. the layer): the partial correlation given the group as a categorical covariate.
double partial_correlation(const std::vector<double>& x, const std::vector<double>& y,
                           const std::vector<int>& group_of);

// A document bootstrap needs at least this many documents: with one, every resample is that
// document and the interval would collapse onto the point estimate without meaning anything.
constexpr int kBootstrapMinimumDocuments = 2;

// Per N: Pearson correlation across heads of x_h = mean_d R[d, h, N] and y_h = mean_d ρ0[d, h],
// with a 95% percentile interval over `replicates` bootstrap resamples of the documents (the
// same resample for every N within a replicate). Replicate r draws from SplitMix64 seeded by
// a hash of (seed, r) with unbiased bounded integers; the interval is the 2.5 and 97.5 percentiles
// with linear interpolation between order statistics (Hyndman–Fan type 7, as R and NumPy default).
// replicates = 0, fewer than kBootstrapMinimumDocuments documents (then no resample is drawn),
// or any replicate whose correlation is undefined, gives NaN intervals.
// `group` > 1 correlates per key/value head instead of per query head: the `group` consecutive
// query heads of one GQA group (layer-major order, as extract writes them) share their value
// states, hence ρ0, so they enter once, with x = their R averaged and y = their ρ0 (equal up to
// rounding, averaged too). group = 1 is per query head. It must divide `heads`.
// `threads` (≤ 0: all) evaluates replicates in parallel; the result does not depend on it.
std::vector<CorrelationRow> recall_rho0_correlation(const PerDocArrays& arrays, int replicates,
                                                    std::uint64_t seed, int threads = 1,
                                                    int group = 1);

// Why corr_rho0.csv has no interval for a run of `documents` documents, or "" when it can.
std::string bootstrap_note(int documents);

// Pearson correlation of two equally long series; NaN when either variance is 0 or n < 2.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// corr_rho0.csv: N,heads,corr,ci_lo,ci_hi,replicates,head_lo,head_hi,partial_layer,partial_lo,
// partial_hi; an undefined value is an empty field.
void write_correlation_csv(const std::vector<CorrelationRow>& rows, const std::string& path);

}  // namespace attngeo::compare
