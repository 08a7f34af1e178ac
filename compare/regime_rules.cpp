// Head labels by both rules and their bootstrap stability; see regime_rules.hpp.
#include "compare/regime_rules.hpp"

#include <omp.h>

#include <string>

#include "common/errors.hpp"
#include "compare/bootstrap.hpp"

namespace attngeo::compare {
namespace {

// One head's document-weighted means of what the two rules read.
struct HeadMeans {
    double m_sink = 0, m_last = 0, m_rest = 0;
    std::vector<double> cos_s_v0, cos_s_vL;  // [S]
};

HeadMeans head_means(const PerDocArrays& a, std::size_t h, const std::vector<double>& weight) {
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads, S = a.sizes.size();
    HeadMeans m;
    m.cos_s_v0.assign(S, 0.0);
    m.cos_s_vL.assign(S, 0.0);
    double total = 0;
    for (int d = 0; d < a.docs; ++d) {
        const double w = weight[d];
        if (w == 0) continue;
        total += w;
        const std::size_t base = static_cast<std::size_t>(d) * H + h;
        m.m_sink += w * a.m_sink[base];
        m.m_last += w * a.m_last[base];
        m.m_rest += w * a.m_rest[base];
        for (std::size_t s = 0; s < S; ++s) {
            m.cos_s_v0[s] += w * a.cos_s_v0[base * S + s];
            m.cos_s_vL[s] += w * a.cos_s_vL[base * S + s];
        }
    }
    m.m_sink /= total, m.m_last /= total, m.m_rest /= total;
    for (std::size_t s = 0; s < S; ++s)
        m.cos_s_v0[s] /= total, m.cos_s_vL[s] /= total;
    return m;
}

theory::WordedRegime worded(double m_sink, double m_last, double m_rest, const HeadMeans& curves,
                            const PerDocArrays& a, int context) {
    return theory::classify_head_by_wording(m_sink, m_last, m_rest, a.sizes, curves.cos_s_v0,
                                            curves.cos_s_vL, context);
}

void check_shapes(const EmpiricalRun& run, const PerDocArrays& a) {
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads, S = a.sizes.size();
    const std::size_t per_head = static_cast<std::size_t>(a.docs) * H;
    if (a.layers != run.layers || a.heads != run.heads || run.rows.size() != H ||
        a.m_sink.size() != per_head || a.m_last.size() != per_head || a.m_rest.size() != per_head ||
        a.cos_s_v0.size() != per_head * S || a.cos_s_vL.size() != per_head * S || a.docs < 1)
        throw_domain_error("attngeo::compare::label_heads",
                           "per-document arrays do not match the run's heads and N grid");
}

}  // namespace

RegimeLabels label_heads(const EmpiricalRun& run, const PerDocArrays& arrays, int replicates,
                         std::uint64_t seed, int threads) {
    check_shapes(run, arrays);
    if (replicates < 0)
        throw_domain_error("attngeo::compare::label_heads",
                           "replicates = " + std::to_string(replicates) + " < 0");
    if (arrays.docs < kBootstrapMinimumDocuments) replicates = 0;
    const std::size_t H = run.rows.size();
    RegimeLabels out;
    out.replicates = replicates;
    out.heads.resize(H);
    const std::vector<double> ones(arrays.docs, 1.0);
    for (std::size_t h = 0; h < H; ++h) {
        const EmpiricalHead& row = run.rows[h];
        out.heads[h].magnitudes = row.regime;
        out.heads[h].wording = worded(row.m_sink, row.m_last, row.m_rest,
                                      head_means(arrays, h, ones), arrays, run.context);
    }
    if (replicates == 0) return out;
    // [replicates][H] whether replicate r keeps head h's label, by each rule.
    std::vector<std::vector<char>> same(replicates), same_wording(replicates);
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    schedule(dynamic, 4)
    for (int r = 0; r < replicates; ++r) {
        const std::vector<double> weight = resample_counts(seed, r, arrays.docs);
        same[r].resize(H);
        same_wording[r].resize(H);
        for (std::size_t h = 0; h < H; ++h) {
            const HeadMeans m = head_means(arrays, h, weight);
            same[r][h] =
                theory::classify_head(m.m_sink, m.m_last, m.m_rest) == out.heads[h].magnitudes;
            same_wording[r][h] = worded(m.m_sink, m.m_last, m.m_rest, m, arrays, run.context) ==
                                 out.heads[h].wording;
        }
    }
    for (std::size_t h = 0; h < H; ++h) {
        int kept = 0, kept_wording = 0;
        for (int r = 0; r < replicates; ++r)
            kept += same[r][h], kept_wording += same_wording[r][h];
        out.heads[h].stability = static_cast<double>(kept) / replicates;
        out.heads[h].stability_wording = static_cast<double>(kept_wording) / replicates;
    }
    return out;
}

}  // namespace attngeo::compare
