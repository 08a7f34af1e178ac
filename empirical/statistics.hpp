// Per-head statistics of real attention, streamed over documents (SPEC §6): value norms by
// position and their CV, λ, ρ0, cosine by lag, mean α and contribution by position, P/R/F on
// an N grid, the s(N) diagnostics of Figure 7, the three magnitudes and the head regime.
// Torch-free: it reads the final query row α and the value states of one document at a time.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "simulate/sums.hpp"
#include "theory/metrics.hpp"

namespace attngeo::empirical {

struct StatisticsSettings {
    int context = 0;         // n = positions per window (all documents have it)
    int max_lag = 128;       // cos by lag 1..max_lag
    std::vector<int> sizes;  // the N grid for P/R/F and the diagnostics, within 1..n
    theory::Ranking ranking = theory::Ranking::attention;
    theory::Distance distance = theory::Distance::euclidean;
};

// One (layer, query head): sums over documents.
class HeadStatistics {
  public:
    HeadStatistics() = default;
    explicit HeadStatistics(const StatisticsSettings& settings);

    // alpha: [n] final query row (token 0 = sink, n−1 = the query itself);
    // values: [n, d] value vectors of this head's kv head, row-major, float32.
    void add_document(const float* alpha, const float* values, int d);

    std::int64_t documents() const { return documents_; }

    // Results (means over documents unless said otherwise).
    std::vector<double> norm_by_position() const;     // [n] mean ‖v_i‖
    std::vector<double> alpha_by_position() const;    // [n] mean α_i
    std::vector<double> contrib_by_position() const;  // [n] mean ‖α_i v_i‖
    double norm_mean() const;      // mean over i ≥ 1 of the document-mean profile
    double norm_median() const;    // median over i ≥ 1 of the document-mean profile (= C)
    double cv_positional() const;  // CV over i ≥ 1 of the document-mean profile
    double cv_pooled() const;      // CV of ‖v_i‖ pooled over i ≥ 1 and documents
    double lambda() const;         // mean ‖v_0‖ / norm_median (SPEC §7)
    double rho0() const;           // mean over documents of mean_{j≥1} cos(v_0, v_j)
    double cos_at_lag(int lag) const;
    std::int64_t pairs_at_lag(int lag) const;
    double sink_mass() const { return mean(sink_mass_); }
    double last_mass() const { return mean(last_mass_); }
    double m_sink() const { return mean(m_sink_); }
    double m_last() const { return mean(m_last_); }
    double m_rest() const { return mean(m_rest_); }
    // Retriever if m_last is the largest of (m_sink, m_last, m_rest), Mixer if the middle one,
    // Reset if the smallest (SPEC §6 decision).
    std::string regime() const;

    const std::vector<int>& sizes() const { return settings_.sizes; }
    const simulate::MomentSums& precision(std::size_t s) const { return precision_[s]; }
    const simulate::MomentSums& recall(std::size_t s) const { return recall_[s]; }
    const simulate::MomentSums& fmax(std::size_t s) const { return fmax_[s]; }
    const simulate::MomentSums& fmin(std::size_t s) const { return fmin_[s]; }
    // Figure 7 diagnostics at sizes()[s], means over documents.
    double s_norm(std::size_t s) const { return diag_[s][0] / documents_; }
    double s_norm_no_sink(std::size_t s) const { return diag_[s][1] / documents_; }
    double s_norm_no_last(std::size_t s) const { return diag_[s][2] / documents_; }
    double cos_s_v0(std::size_t s) const { return diag_[s][3] / documents_; }
    double cos_s_vL(std::size_t s) const { return diag_[s][4] / documents_; }

    // Per document, for bootstrap intervals: [documents][|sizes|] and [documents].
    const std::vector<std::vector<float>>& per_doc_precision() const { return per_doc_precision_; }
    const std::vector<std::vector<float>>& per_doc_recall() const { return per_doc_recall_; }
    const std::vector<float>& per_doc_rho0() const { return per_doc_rho0_; }
    const std::vector<float>& per_doc_lambda() const { return per_doc_lambda_; }

  private:
    double mean(double sum) const { return documents_ > 0 ? sum / documents_ : 0.0; }
    StatisticsSettings settings_;
    std::int64_t documents_ = 0;
    std::vector<double> norm_sum_, alpha_sum_, contrib_sum_;  // [n]
    double pooled_norm_ = 0, pooled_norm_sq_ = 0;
    std::int64_t pooled_count_ = 0;
    double rho0_sum_ = 0;
    std::vector<double> lag_sum_;          // [max_lag + 1]
    std::vector<std::int64_t> lag_pairs_;  // [max_lag + 1]
    double sink_mass_ = 0, last_mass_ = 0, m_sink_ = 0, m_last_ = 0, m_rest_ = 0;
    std::vector<simulate::MomentSums> precision_, recall_, fmax_, fmin_;  // [|sizes|]
    std::vector<std::array<double, 5>> diag_;                             // [|sizes|]
    std::vector<std::vector<float>> per_doc_precision_, per_doc_recall_;
    std::vector<float> per_doc_rho0_, per_doc_lambda_;
};

}  // namespace attngeo::empirical
