// The head regimes by two rules — ours (the order of the magnitudes m_sink, m_last, m_rest) and
// the paper's wording (which also reads the cosine curves of s(N) with v_0 and v_L) — and how
// stable each head's label is over a bootstrap of the documents (docs/design.md §7, claim C3).
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "compare/correlation.hpp"
#include "compare/extract_folder_reader.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::compare {

// One head's labels.
struct HeadLabels {
    theory::HeadRegime magnitudes = theory::HeadRegime::reset;  // heads.csv's regime
    theory::WordedRegime wording = theory::WordedRegime::none;  // the paper's wording
    // The share of bootstrap replicates that give the head the same label; NaN without a
    // bootstrap (fewer than 2 documents or no replicates).
    double stability = std::numeric_limits<double>::quiet_NaN();
    double stability_wording = std::numeric_limits<double>::quiet_NaN();
};

struct RegimeLabels {
    std::vector<HeadLabels> heads;  // [layers · heads], in run.rows order
    int replicates = 0;             // resamples drawn (0: no stability)
};

// The labels of every head of `run` and their stability over `replicates` resamples of the
// documents (compare/bootstrap.hpp's, keyed by `seed`; the same resample for every head). The
// wording rule reads the mean over documents of `arrays`' cos_s_v0 and cos_s_vL; each replicate
// relabels from the resampled means of m_sink, m_last, m_rest and the two curves. The result
// does not depend on `threads`. Throws std::domain_error when arrays and run disagree in shape.
RegimeLabels label_heads(const EmpiricalRun& run, const PerDocArrays& arrays, int replicates,
                         std::uint64_t seed, int threads);

}  // namespace attngeo::compare
