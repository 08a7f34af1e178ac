// Streamed per-head statistics; see statistics.hpp. Geometry in double from float32 inputs.
#include "empirical/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attngeo::empirical {
namespace {

double median_of(std::vector<double> x) {
    if (x.empty()) return 0;
    const std::size_t mid = x.size() / 2;
    std::nth_element(x.begin(), x.begin() + mid, x.end());
    if (x.size() % 2 == 1) return x[mid];
    const double upper = x[mid];
    return 0.5 * (upper + *std::max_element(x.begin(), x.begin() + mid));
}

double cv_of(const std::vector<double>& x) {
    if (x.empty()) return 0;
    double sum = 0, sq = 0;
    for (double v : x)
        sum += v;
    const double mean = sum / x.size();
    for (double v : x)
        sq += (v - mean) * (v - mean);
    return mean > 0 ? std::sqrt(sq / x.size()) / mean : 0.0;
}

double cosine(const double* a, double norm_a, const double* b, double norm_b, int d) {
    if (norm_a == 0 || norm_b == 0) return 0.0;
    double dot = 0;
    for (int t = 0; t < d; ++t)
        dot += a[t] * b[t];
    return dot / (norm_a * norm_b);
}

}  // namespace

HeadStatistics::HeadStatistics(const StatisticsSettings& settings)
    : settings_(settings),
      norm_sum_(settings.context, 0.0),
      alpha_sum_(settings.context, 0.0),
      contrib_sum_(settings.context, 0.0),
      lag_sum_(settings.max_lag + 1, 0.0),
      lag_pairs_(settings.max_lag + 1, 0),
      precision_(settings.sizes.size()),
      recall_(settings.sizes.size()),
      fmax_(settings.sizes.size()),
      fmin_(settings.sizes.size()),
      diag_(settings.sizes.size(), {0, 0, 0, 0, 0}) {
    if (settings.context < 2) throw std::domain_error("HeadStatistics: context must be >= 2");
    for (int N : settings.sizes) {
        if (N < 1 || N > settings.context)
            throw std::domain_error("HeadStatistics: N = " + std::to_string(N) +
                                    " outside 1..context");
    }
}

void HeadStatistics::add_document(const float* alpha, const float* values, int d) {
    const int n = settings_.context;
    const int last = n - 1;
    theory::TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, d);
    std::vector<double> norm(n);
    for (int i = 0; i < n; ++i) {
        tokens.alpha[i] = alpha[i];
        double sq = 0;
        for (int t = 0; t < d; ++t) {
            const double x = values[static_cast<std::size_t>(i) * d + t];
            tokens.values(i, t) = x;
            sq += x * x;
        }
        norm[i] = std::sqrt(sq);
    }
    const double* v = tokens.values.data();
    auto row = [&](int i) { return v + static_cast<std::size_t>(i) * d; };

    for (int i = 0; i < n; ++i) {
        norm_sum_[i] += norm[i];
        alpha_sum_[i] += tokens.alpha[i];
        contrib_sum_[i] += tokens.alpha[i] * norm[i];
    }
    for (int i = 1; i < n; ++i) {
        pooled_norm_ += norm[i];
        pooled_norm_sq_ += norm[i] * norm[i];
        ++pooled_count_;
    }
    double rho0 = 0;
    for (int j = 1; j < n; ++j)
        rho0 += cosine(row(0), norm[0], row(j), norm[j], d);
    rho0 /= (n - 1);
    rho0_sum_ += rho0;
    for (int lag = 1; lag <= settings_.max_lag; ++lag) {
        for (int i = 1; i + lag < n; ++i) {
            lag_sum_[lag] += cosine(row(i), norm[i], row(i + lag), norm[i + lag], d);
            ++lag_pairs_[lag];
        }
    }
    sink_mass_ += tokens.alpha[0];
    last_mass_ += tokens.alpha[last];
    m_sink_ += tokens.alpha[0] * norm[0];
    m_last_ += tokens.alpha[last] * norm[last];
    std::vector<double> rest(d, 0.0);
    for (int i = 1; i < last; ++i)
        for (int t = 0; t < d; ++t)
            rest[t] += tokens.alpha[i] * row(i)[t];
    m_rest_ += theory::euclidean_norm(rest.data(), d);

    // P, R, F on the N grid: the Gram path for every N, the per-N path for a grid.
    const bool all = static_cast<int>(settings_.sizes.size()) == n;
    const auto rows = all ? theory::selection_metrics_gram(tokens, settings_.sizes,
                                                           settings_.ranking, settings_.distance)
                          : theory::selection_metrics_reference(
                                tokens, settings_.sizes, settings_.ranking, settings_.distance);
    std::vector<float> doc_p(rows.size()), doc_r(rows.size());
    for (std::size_t s = 0; s < rows.size(); ++s) {
        precision_[s].add(rows[s].precision_at_rmax);
        recall_[s].add(rows[s].recall_at_rmin);
        fmax_[s].add(rows[s].f_at_rmax);
        fmin_[s].add(rows[s].f_at_rmin);
        doc_p[s] = static_cast<float>(rows[s].precision_at_rmax);
        doc_r[s] = static_cast<float>(rows[s].recall_at_rmin);
    }
    per_doc_precision_.push_back(std::move(doc_p));
    per_doc_recall_.push_back(std::move(doc_r));
    per_doc_rho0_.push_back(static_cast<float>(rho0));
    const double doc_median = median_of(std::vector<double>(norm.begin() + 1, norm.end()));
    per_doc_lambda_.push_back(static_cast<float>(doc_median > 0 ? norm[0] / doc_median : 0.0));

    // Figure 7: s(N) in rank order, with the sink or the last token left out.
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(tokens, settings_.ranking));
    std::vector<double> s_vec(d, 0.0);
    bool has_sink = false, has_last = false;
    std::size_t next = 0;
    for (int k = 0; k < n && next < settings_.sizes.size(); ++k) {
        const int token = order[k];
        for (int t = 0; t < d; ++t)
            s_vec[t] += tokens.alpha[token] * row(token)[t];
        has_sink = has_sink || token == 0;
        has_last = has_last || token == last;
        while (next < settings_.sizes.size() && settings_.sizes[next] == k + 1) {
            const double s_norm = theory::euclidean_norm(s_vec.data(), d);
            double without_sink = 0, without_last = 0;
            for (int t = 0; t < d; ++t) {
                const double a = s_vec[t] - (has_sink ? tokens.alpha[0] * row(0)[t] : 0.0);
                const double b = s_vec[t] - (has_last ? tokens.alpha[last] * row(last)[t] : 0.0);
                without_sink += a * a;
                without_last += b * b;
            }
            auto& dg = diag_[next];
            dg[0] += s_norm;
            dg[1] += std::sqrt(without_sink);
            dg[2] += std::sqrt(without_last);
            dg[3] += cosine(s_vec.data(), s_norm, row(0), norm[0], d);
            dg[4] += cosine(s_vec.data(), s_norm, row(last), norm[last], d);
            ++next;
        }
    }
    ++documents_;
}

std::vector<double> HeadStatistics::norm_by_position() const {
    std::vector<double> out(norm_sum_.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = mean(norm_sum_[i]);
    return out;
}

std::vector<double> HeadStatistics::alpha_by_position() const {
    std::vector<double> out(alpha_sum_.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = mean(alpha_sum_[i]);
    return out;
}

std::vector<double> HeadStatistics::contrib_by_position() const {
    std::vector<double> out(contrib_sum_.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = mean(contrib_sum_[i]);
    return out;
}

double HeadStatistics::norm_mean() const {
    const auto profile = norm_by_position();
    double sum = 0;
    for (std::size_t i = 1; i < profile.size(); ++i)
        sum += profile[i];
    return sum / (profile.size() - 1);
}

double HeadStatistics::norm_median() const {
    const auto profile = norm_by_position();
    return median_of(std::vector<double>(profile.begin() + 1, profile.end()));
}

double HeadStatistics::cv_positional() const {
    const auto profile = norm_by_position();
    return cv_of(std::vector<double>(profile.begin() + 1, profile.end()));
}

double HeadStatistics::cv_pooled() const {
    if (pooled_count_ == 0) return 0;
    const double mean_norm = pooled_norm_ / pooled_count_;
    const double variance = std::max(pooled_norm_sq_ / pooled_count_ - mean_norm * mean_norm, 0.0);
    return mean_norm > 0 ? std::sqrt(variance) / mean_norm : 0.0;
}

double HeadStatistics::lambda() const {
    const double c = norm_median();
    return c > 0 ? mean(norm_sum_[0]) / c : 0.0;
}

double HeadStatistics::rho0() const {
    return mean(rho0_sum_);
}

double HeadStatistics::cos_at_lag(int lag) const {
    return lag_pairs_.at(lag) > 0 ? lag_sum_[lag] / lag_pairs_[lag] : std::nan("");
}

std::int64_t HeadStatistics::pairs_at_lag(int lag) const {
    return lag_pairs_.at(lag);
}

std::string HeadStatistics::regime() const {
    const double sink = m_sink(), last = m_last(), rest = m_rest();
    const int above = (last > sink) + (last > rest);
    return above == 2 ? "Retriever" : above == 1 ? "Mixer" : "Reset";
}

}  // namespace attngeo::empirical
