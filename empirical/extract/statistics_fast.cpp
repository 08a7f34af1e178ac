// The fast per-document path of HeadStatistics (statistics.hpp) and the parallel loop over a
// layer's heads: the simulator's single-precision Gram machinery for P/R at every N, and the
// other statistics as O(n·d) passes that evaluate every value exactly as the reference does.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/cpu_features.hpp"
#include "empirical/extract/statistics.hpp"
#include "empirical/extract/statistics_kernels.hpp"
#include "theory/single_gram.hpp"

namespace attngeo::empirical {

namespace kernels = statistics_kernels;

// One thread's buffers: a layer's heads run in parallel, each thread reusing its own.
struct DocumentScratch {
    int n = 0;
    int ld = 0;                 // transposed's row stride, statistics_kernels::transposed_stride
    std::vector<double> alpha;  // [n] α_i widened to double
    std::vector<double> transposed;  // [d, ld] v_it, token index fastest
    std::vector<double> norm;        // [n] ‖v_i‖
    std::vector<double> to_first;    // [n] ⟨v_0, v_j⟩
    std::vector<double> lag_dots;    // [kLagBlock, max_lag] ⟨v_i, v_(i+k)⟩
    std::vector<double> lag_totals;  // [max_lag] Σ_i cos(v_i, v_(i+k))
    std::vector<int> order;          // [n] π
    theory::RowMatrix ranked;        // [n, d] y_(π_k)
    std::vector<float> panels;       // the packed tiles' σ·ranked
    Eigen::MatrixXf single_gram;     // [ld, n] lower triangle of fl32(σY)·fl32(σY)ᵀ
    theory::SingleRowMatrix scaled;  // [n, d] fl32(σY), without AVX2
    Eigen::MatrixXd gram;            // [n, n] YYᵀ for the cosine distance
    std::vector<double> s_vec, sink_term, last_term;  // [d] s(N), α_0 v_0, α_L v_L
    std::vector<theory::SelectionMetrics> rows;
    static constexpr int kLagBlock = 64;  // tokens per lag_dots call: its output stays in L1/L2
};

namespace {

void check_document(const float* alpha, const float* values, int n, int d) {
    if (d < 1) throw std::domain_error("HeadStatistics::add_document: d = " + std::to_string(d));
    for (int i = 0; i < n; ++i)
        if (!(std::isfinite(alpha[i]) && alpha[i] >= 0))
            throw std::domain_error("HeadStatistics::add_document: alpha[" + std::to_string(i) +
                                    "] = " + std::to_string(alpha[i]) + ", expected >= 0");
    for (std::size_t k = 0; k < static_cast<std::size_t>(n) * d; ++k)
        if (!std::isfinite(values[k]))
            throw std::domain_error("HeadStatistics::add_document: value " + std::to_string(k) +
                                    " is not finite");
}

// π and the ranked contributions y_(π_k) = α_(π_k)·v_(π_k) (the same double products as
// theory::selection_metrics_gram forms); the scores as theory::selection_scores makes them.
void rank_contributions(DocumentScratch& s, const float* values, int d, theory::Ranking ranking) {
    const int n = s.n;
    Eigen::VectorXd scores(n);
    for (int i = 0; i < n; ++i)
        scores[i] = ranking == theory::Ranking::attention ? s.alpha[i] : s.alpha[i] * s.norm[i];
    s.order = theory::selection_order(scores);
    s.ranked.resize(n, d);
    for (int k = 0; k < n; ++k) {
        const double a = s.alpha[s.order[k]];
        const float* v = values + static_cast<std::size_t>(s.order[k]) * d;
        double* y = s.ranked.row(k).data();
        for (int t = 0; t < d; ++t)
            y[t] = a * v[t];
    }
}

// Every N through the certified sweep, counts only: the single-precision Gram matrix (the packed
// AVX2 tiles, or Eigen's float product without them) for the Euclidean distance, a double one
// for the cosine distance, or the device's.
void all_sizes_metrics(DocumentScratch& s, const RankedGram* ranked_gram,
                       const StatisticsSettings& settings) {
    const int n = s.n;
    if (ranked_gram != nullptr) {
        theory::selection_metrics_from_gram(s.ranked, *ranked_gram->gram, settings.sizes,
                                            settings.distance, s.rows, /*radii=*/false);
    } else if (settings.distance == theory::Distance::euclidean) {
        int scale_exponent;
        int ld = n;
        if (use_avx2_fma()) {
            scale_exponent = theory::single_precision_scale_exponent(s.ranked);
            ld = theory::single_gram_leading_dimension(n);
            s.single_gram.resize(ld, n);
            theory::single_gram_lower(s.ranked, scale_exponent, s.single_gram.data(), ld, s.panels);
        } else {
            scale_exponent = theory::scaled_single_precision(s.ranked, s.scaled);
            s.single_gram.setZero(n, n);
            s.single_gram.selfadjointView<Eigen::Lower>().rankUpdate(s.scaled);
        }
        const std::vector<double> band_norms = theory::band_row_norms(s.ranked, scale_exponent);
        theory::selection_metrics_from_single_gram(s.ranked, s.single_gram.data(), ld,
                                                   scale_exponent, settings.sizes, s.rows,
                                                   /*radii=*/false, &band_norms);
    } else {
        s.gram.setZero(n, n);
        s.gram.selfadjointView<Eigen::Lower>().rankUpdate(s.ranked);
        theory::symmetrize_from_lower(s.gram);
        theory::selection_metrics_from_gram(s.ranked, s.gram, settings.sizes, settings.distance,
                                            s.rows, /*radii=*/false);
    }
}

// A sparse N grid: the per-N reference, O(|sizes|·n·d).
void sparse_sizes_metrics(DocumentScratch& s, const float* values, int d,
                          const StatisticsSettings& settings) {
    theory::TokenGeometry tokens;
    tokens.alpha = Eigen::Map<const Eigen::VectorXd>(s.alpha.data(), s.n);
    tokens.values.resize(s.n, d);
    for (int i = 0; i < s.n; ++i)
        for (int t = 0; t < d; ++t)
            tokens.values(i, t) = values[static_cast<std::size_t>(i) * d + t];
    s.rows = theory::selection_metrics_reference(tokens, settings.sizes, settings.ranking,
                                                 settings.distance);
}

void check_ranked_gram(const RankedGram& ranked, int n) {
    const Eigen::MatrixXd& gram = *ranked.gram;
    if (gram.rows() != n || gram.cols() != n || static_cast<int>(ranked.order->size()) != n)
        throw std::invalid_argument(
            "HeadStatistics::add_document: Gram matrix of " + std::to_string(gram.rows()) + "x" +
            std::to_string(gram.cols()) + " and an order of " +
            std::to_string(ranked.order->size()) + " tokens, expected " + std::to_string(n));
}

}  // namespace

DocumentRecord HeadStatistics::add_document(const float* alpha, const float* values, int d,
                                            const RankedGram* ranked_gram) {
    const int n = settings_.context;
    check_document(alpha, values, n, d);
    if (ranked_gram != nullptr) check_ranked_gram(*ranked_gram, n);
    static thread_local DocumentScratch scratch;
    DocumentScratch& s = scratch;
    s.n = n;
    s.alpha.assign(alpha, alpha + n);
    s.ld = kernels::transposed_stride(n);
    s.transposed.resize(static_cast<std::size_t>(s.ld) * d);
    s.norm.resize(n);
    kernels::transpose_to_double(values, n, d, s.ld, s.transposed.data());
    kernels::token_norms(s.transposed.data(), n, d, s.ld, s.norm.data());
    rank_contributions(s, values, d, settings_.ranking);
    if (ranked_gram != nullptr && *ranked_gram->order != s.order)
        throw std::invalid_argument(
            "HeadStatistics::add_document: the Gram matrix's order is "
            "not this head's ranking");
    if (ranked_gram != nullptr || uses_gram_path(settings_))
        all_sizes_metrics(s, ranked_gram, settings_);
    else
        sparse_sizes_metrics(s, values, d, settings_);
    // The metrics are in hand and every check is behind us: only now do the sums change.
    add_profiles_fast(s);
    DocumentRecord record;
    add_cosines_fast(s, d, record);
    add_magnitudes_fast(s, values, d, record);
    add_selection(s.rows, record);
    const double doc_median =
        kernels::median_of(std::vector<double>(s.norm.begin() + 1, s.norm.end()));
    record.lambda = static_cast<float>(doc_median > 0 ? s.norm[0] / doc_median : 0.0);
    record.C = static_cast<float>(doc_median);
    record.alpha.assign(alpha, alpha + n);
    add_diagnostics_fast(s, d, record);
    ++documents_;
    return record;
}

void HeadStatistics::add_profiles_fast(const DocumentScratch& s) {
    for (int i = 0; i < s.n; ++i) {
        kernels::add_exact(norm_sum_[i], s.norm[i]);
        kernels::add_exact(alpha_sum_[i], s.alpha[i]);
        kernels::add_exact(contrib_sum_[i], s.alpha[i] * s.norm[i]);
    }
    for (int i = 1; i < s.n; ++i) {
        kernels::add_exact(pooled_norm_, s.norm[i]);
        kernels::add_exact(pooled_norm_sq_, s.norm[i] * s.norm[i]);
        ++pooled_count_;
    }
}

// ρ0 and cos by lag: every dot product from the kernels, each cosine and each per-lag sum in
// the reference's order (ascending token), the per-lag sums for all lags side by side.
void HeadStatistics::add_cosines_fast(DocumentScratch& s, int d, DocumentRecord& record) {
    const int n = s.n, max_lag = settings_.max_lag;
    s.to_first.resize(n);
    kernels::dots_with_first(s.transposed.data(), n, d, s.ld, s.to_first.data());
    double rho0 = 0;
    for (int j = 1; j < n; ++j)
        rho0 += kernels::cosine_from_dot(s.to_first[j], s.norm[0], s.norm[j]);
    rho0 /= (n - 1);
    kernels::add_exact(rho0_sum_, rho0);
    record.rho0 = static_cast<float>(rho0);
    s.lag_totals.assign(max_lag, 0.0);
    s.lag_dots.resize(static_cast<std::size_t>(DocumentScratch::kLagBlock) * max_lag);
    for (int first = 1; first < n - 1; first += DocumentScratch::kLagBlock) {
        const int last = std::min(first + DocumentScratch::kLagBlock, n - 1);
        kernels::lag_dots(s.transposed.data(), n, d, s.ld, max_lag, first, last, s.lag_dots.data());
        for (int i = first; i < last; ++i)  // ‖v_(i+k)‖ at k − 1 from s.norm[i + 1]
            kernels::add_lag_cosines(
                s.lag_dots.data() + static_cast<std::size_t>(i - first) * max_lag, s.norm[i],
                s.norm.data() + i + 1, std::min(max_lag, n - 1 - i), s.lag_totals.data());
    }
    record.cos_by_lag.assign(max_lag, std::nanf(""));
    for (int lag = 1; lag <= max_lag; ++lag) {
        lag_pairs_[lag] += std::max(0, n - 1 - lag);
        kernels::add_exact(lag_sum_[lag], s.lag_totals[lag - 1]);
        if (n - 1 - lag > 0)
            record.cos_by_lag[lag - 1] = static_cast<float>(s.lag_totals[lag - 1] / (n - 1 - lag));
    }
}

void HeadStatistics::add_magnitudes_fast(const DocumentScratch& s, const float* values, int d,
                                         DocumentRecord& record) {
    const int last = s.n - 1;
    kernels::add_exact(sink_mass_, s.alpha[0]);
    kernels::add_exact(last_mass_, s.alpha[last]);
    const double m_sink = s.alpha[0] * s.norm[0], m_last = s.alpha[last] * s.norm[last];
    kernels::add_exact(m_sink_, m_sink);
    kernels::add_exact(m_last_, m_last);
    std::vector<double> rest(d, 0.0);
    for (int i = 1; i < last; ++i) {
        const double a = s.alpha[i];
        const float* v = values + static_cast<std::size_t>(i) * d;
        for (int t = 0; t < d; ++t)
            rest[t] += a * v[t];
    }
    const double m_rest = theory::euclidean_norm(rest.data(), d);
    kernels::add_exact(m_rest_, m_rest);
    record.m_sink = static_cast<float>(m_sink);
    record.m_last = static_cast<float>(m_last);
    record.m_rest = static_cast<float>(m_rest);
}

// Figure 7's diagnostics: s(N) from the ranked rows in rank order; at each wanted N the five
// reductions (‖s‖², the two leave-one-out norms², ⟨s, v_0⟩, ⟨s, v_L⟩) in one pass over t, each
// in ascending t as the reference's separate loops sum them.
void HeadStatistics::add_diagnostics_fast(DocumentScratch& s, int d, DocumentRecord& record) {
    const int n = s.n, last = n - 1;
    const std::vector<int>& sizes = settings_.sizes;
    record.cos_s_v0.assign(sizes.size(), 0.0f);
    record.cos_s_vL.assign(sizes.size(), 0.0f);
    s.s_vec.assign(d, 0.0);
    s.sink_term.assign(d, 0.0);
    s.last_term.assign(d, 0.0);
    std::vector<double> v0(d), vL(d);
    for (int t = 0; t < d; ++t) {
        v0[t] = s.transposed[static_cast<std::size_t>(t) * s.ld];
        vL[t] = s.transposed[static_cast<std::size_t>(t) * s.ld + last];
    }
    std::size_t next = 0;
    for (int k = 0; k < n && next < sizes.size(); ++k) {
        const int token = s.order[k];
        const double* y = s.ranked.row(k).data();
        for (int t = 0; t < d; ++t)
            s.s_vec[t] += y[t];
        if (token == 0) std::copy(y, y + d, s.sink_term.begin());
        if (token == last) std::copy(y, y + d, s.last_term.begin());
        while (next < sizes.size() && sizes[next] == k + 1) {
            double squared = 0, without_sink = 0, without_last = 0, dot_sink = 0, dot_last = 0;
            for (int t = 0; t < d; ++t) {
                const double x = s.s_vec[t];
                const double a = x - s.sink_term[t], b = x - s.last_term[t];
                squared += x * x;
                without_sink += a * a;
                without_last += b * b;
                dot_sink += x * v0[t];
                dot_last += x * vL[t];
            }
            const double s_norm = std::sqrt(squared);
            const double to_sink = kernels::cosine_from_dot(dot_sink, s_norm, s.norm[0]),
                         to_last = kernels::cosine_from_dot(dot_last, s_norm, s.norm[last]);
            auto& dg = diag_[next];
            kernels::add_exact(dg[0], s_norm);
            kernels::add_exact(dg[1], std::sqrt(without_sink));
            kernels::add_exact(dg[2], std::sqrt(without_last));
            kernels::add_exact(dg[3], to_sink);
            kernels::add_exact(dg[4], to_last);
            record.cos_s_v0[next] = static_cast<float>(to_sink);
            record.cos_s_vL[next] = static_cast<float>(to_last);
            ++next;
        }
    }
}

int statistics_threads(int requested) {
    if (requested > 0) return requested;
    if (plain_paths_forced()) return 1;
    return std::max(1u, std::thread::hardware_concurrency());
}

void for_each_head(int count, int threads, const std::function<void(int)>& work) {
    std::exception_ptr failure;
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic, 1)
    for (int h = 0; h < count; ++h) {
        try {
            work(h);
        } catch (...) {
#pragma omp critical(attngeo_for_each_head)
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace attngeo::empirical
