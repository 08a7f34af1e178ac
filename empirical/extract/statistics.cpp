// Streamed per-head statistics; see statistics.hpp. Geometry in double from float32 inputs.
// This file holds the plain per-document reference, the state and the results; the fast
// per-document path is statistics_fast.cpp.
#include "empirical/extract/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "empirical/extract/statistics_kernels.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::empirical {

namespace {

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
    if (norm_a == 0 || norm_b == 0) return 0.0;  // skip the dot product; the rule is below
    double dot = 0;
    for (int t = 0; t < d; ++t)
        dot += a[t] * b[t];
    return statistics_kernels::cosine_from_dot(dot, norm_a, norm_b);
}

}  // namespace

HeadStatistics::HeadStatistics(const StatisticsSettings& settings)
    : settings_(settings),
      norm_sum_(settings.context),
      alpha_sum_(settings.context),
      contrib_sum_(settings.context),
      lag_sum_(settings.max_lag + 1),
      lag_pairs_(settings.max_lag + 1, 0),
      precision_(settings.sizes.size()),
      recall_(settings.sizes.size()),
      fmax_(settings.sizes.size()),
      fmin_(settings.sizes.size()),
      exact_decisions_(settings.sizes.size(), 0),
      diag_(settings.sizes.size()),
      by_length_(settings.length_bins.size()) {
    if (settings.context < 2) throw std::domain_error("HeadStatistics: context must be >= 2");
    for (LengthSums& bin : by_length_) {
        bin.precision.resize(settings.sizes.size());
        bin.recall.resize(settings.sizes.size());
    }
    for (int N : settings.sizes) {
        if (N < 1 || N > settings.context)
            throw std::domain_error("HeadStatistics: N = " + std::to_string(N) +
                                    " outside 1..context");
    }
}

std::vector<int> head_order(const float* alpha, const float* values, int n, int d,
                            theory::Ranking ranking) {
    theory::TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, ranking == theory::Ranking::attention ? 0 : d);
    for (int i = 0; i < n; ++i) {
        tokens.alpha[i] = alpha[i];
        if (ranking != theory::Ranking::attention)
            for (int t = 0; t < d; ++t)
                tokens.values(i, t) = values[static_cast<std::size_t>(i) * d + t];
    }
    if (ranking == theory::Ranking::attention) {
        return theory::selection_order(tokens.alpha);
    }
    return theory::selection_order(theory::selection_scores(tokens, ranking));
}

bool uses_gram_path(const StatisticsSettings& settings) {
    return static_cast<int>(settings.sizes.size()) == settings.context;
}

HeadStatistics::DocumentGeometry HeadStatistics::geometry_of(const float* alpha,
                                                             const float* values, int n, int d) {
    DocumentGeometry doc;
    doc.d = d;
    doc.tokens.alpha.resize(n);
    doc.tokens.values.resize(n, d);
    doc.norm.resize(n);
    for (int i = 0; i < n; ++i) {
        doc.tokens.alpha[i] = alpha[i];
        double sq = 0;
        for (int t = 0; t < d; ++t) {
            const double x = values[static_cast<std::size_t>(i) * d + t];
            doc.tokens.values(i, t) = x;
            sq += x * x;
        }
        doc.norm[i] = std::sqrt(sq);
    }
    return doc;
}

DocumentRecord HeadStatistics::add_document_reference(const float* alpha, const float* values,
                                                      int d, const RankedGram* ranked_gram) {
    const int n = settings_.context;
    const DocumentGeometry doc = geometry_of(alpha, values, n, d);
    add_profiles(doc);
    DocumentRecord record;
    add_cosines(doc, record);
    add_magnitudes(doc, record);
    add_selection(selection_rows(doc, ranked_gram), record);
    const double doc_median =
        statistics_kernels::median_of(std::vector<double>(doc.norm.begin() + 1, doc.norm.end()));
    record.lambda = static_cast<float>(doc_median > 0 ? doc.norm[0] / doc_median : 0.0);
    record.C = static_cast<float>(doc_median);
    record.alpha.assign(alpha, alpha + n);
    add_diagnostics(doc, record);
    ++documents_;
    return record;
}

void HeadStatistics::add_query(const float* alpha, const float* values, int t, int d) {
    int bin = -1;
    for (std::size_t b = 0; b < settings_.length_bins.size(); ++b)
        if (t + 1 >= settings_.length_bins[b].lo && t + 1 <= settings_.length_bins[b].hi)
            bin = static_cast<int>(b);
    if (t < 1 || t >= settings_.context || bin < 0)
        throw std::invalid_argument("HeadStatistics::add_query: position " + std::to_string(t) +
                                    " is not in the run's length bins");
    const int L = t + 1;
    const DocumentGeometry doc = geometry_of(alpha, values, L, d);
    theory::validate_token_geometry(doc.tokens, "HeadStatistics::add_query");
    LengthSums& sums = by_length_[bin];
    std::vector<int> sizes;
    for (int N : settings_.sizes)
        if (N <= settings_.length_bins[bin].shortest) sizes.push_back(N);
    // The same path add_document takes for a grid this dense (identical counts either way).
    const auto rows = static_cast<int>(sizes.size()) == L
                          ? theory::selection_metrics_gram(doc.tokens, sizes, settings_.ranking,
                                                           settings_.distance)
                          : theory::selection_metrics_reference(
                                doc.tokens, sizes, settings_.ranking, settings_.distance);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        sums.precision[k].add(rows[k].precision_at_rmax);
        sums.recall[k].add(rows[k].recall_at_rmin);
    }
    double rho0 = 0;
    for (int j = 1; j < L; ++j)
        rho0 += cosine(doc.row(0), doc.norm[0], doc.row(j), doc.norm[j], d);
    sums.rho0.add(rho0 / (L - 1));
    const double median =
        statistics_kernels::median_of(std::vector<double>(doc.norm.begin() + 1, doc.norm.end()));
    sums.lambda.add(median > 0 ? doc.norm[0] / median : 0.0);
    const auto& a = doc.tokens.alpha;
    sums.sink_mass.add(a[0]);
    sums.m_sink.add(a[0] * doc.norm[0]);
    sums.m_last.add(a[t] * doc.norm[t]);
    std::vector<double> rest(d, 0.0);
    for (int i = 1; i < t; ++i)
        for (int k = 0; k < d; ++k)
            rest[k] += a[i] * doc.row(i)[k];
    sums.m_rest.add(theory::euclidean_norm(rest.data(), d));
    ++sums.queries;
}

void HeadStatistics::add_profiles(const DocumentGeometry& doc) {
    const int n = settings_.context;
    for (int i = 0; i < n; ++i) {
        norm_sum_[i].add(doc.norm[i]);
        alpha_sum_[i].add(doc.tokens.alpha[i]);
        contrib_sum_[i].add(doc.tokens.alpha[i] * doc.norm[i]);
    }
    for (int i = 1; i < n; ++i) {
        pooled_norm_.add(doc.norm[i]);
        pooled_norm_sq_.add(doc.norm[i] * doc.norm[i]);
        ++pooled_count_;
    }
}

void HeadStatistics::add_cosines(const DocumentGeometry& doc, DocumentRecord& record) {
    const int n = settings_.context;
    auto cos = [&](int i, int j) {
        return cosine(doc.row(i), doc.norm[i], doc.row(j), doc.norm[j], doc.d);
    };
    double rho0 = 0;
    for (int j = 1; j < n; ++j)
        rho0 += cos(0, j);
    rho0 /= (n - 1);
    rho0_sum_.add(rho0);
    record.rho0 = static_cast<float>(rho0);
    record.cos_by_lag.assign(settings_.max_lag, std::nanf(""));
    for (int lag = 1; lag <= settings_.max_lag; ++lag) {
        // The document's sum at this lag is formed in double, then added exactly once.
        double lag_total = 0;
        for (int i = 1; i + lag < n; ++i) {
            lag_total += cos(i, i + lag);
            ++lag_pairs_[lag];
        }
        lag_sum_[lag].add(lag_total);
        if (n - 1 - lag > 0)
            record.cos_by_lag[lag - 1] = static_cast<float>(lag_total / (n - 1 - lag));
    }
}

void HeadStatistics::add_magnitudes(const DocumentGeometry& doc, DocumentRecord& record) {
    const int last = settings_.context - 1, d = doc.d;
    const auto& alpha = doc.tokens.alpha;
    sink_mass_.add(alpha[0]);
    last_mass_.add(alpha[last]);
    const double m_sink = alpha[0] * doc.norm[0], m_last = alpha[last] * doc.norm[last];
    m_sink_.add(m_sink);
    m_last_.add(m_last);
    std::vector<double> rest(d, 0.0);
    for (int i = 1; i < last; ++i)
        for (int t = 0; t < d; ++t)
            rest[t] += alpha[i] * doc.row(i)[t];
    const double m_rest = theory::euclidean_norm(rest.data(), d);
    m_rest_.add(m_rest);
    record.m_sink = static_cast<float>(m_sink);
    record.m_last = static_cast<float>(m_last);
    record.m_rest = static_cast<float>(m_rest);
}

// P, R, F on the N grid: the certified Gram path for every N (G from the caller's device or
// formed here), the per-N reference for a sparse grid.
std::vector<theory::SelectionMetrics> HeadStatistics::selection_rows(
    const DocumentGeometry& doc, const RankedGram* ranked_gram) const {
    const int n = settings_.context;
    std::vector<theory::SelectionMetrics> rows;
    if (ranked_gram != nullptr) {
        const Eigen::MatrixXd& gram = *ranked_gram->gram;
        const std::vector<int>& order = *ranked_gram->order;
        if (gram.rows() != n || gram.cols() != n || static_cast<int>(order.size()) != n)
            throw std::invalid_argument(
                "HeadStatistics::add_document: Gram matrix of " + std::to_string(gram.rows()) +
                "x" + std::to_string(gram.cols()) + " and an order of " +
                std::to_string(order.size()) + " tokens, expected " + std::to_string(n));
        theory::RowMatrix ranked(n, doc.d);
        for (int k = 0; k < n; ++k)
            ranked.row(k) = doc.tokens.alpha[order[k]] * doc.tokens.values.row(order[k]);
        theory::selection_metrics_from_gram(ranked, gram, settings_.sizes, settings_.distance,
                                            rows);
    } else if (uses_gram_path(settings_)) {
        rows = theory::selection_metrics_gram(doc.tokens, settings_.sizes, settings_.ranking,
                                              settings_.distance);
    } else {
        rows = theory::selection_metrics_reference(doc.tokens, settings_.sizes, settings_.ranking,
                                                   settings_.distance);
    }
    return rows;
}

void HeadStatistics::add_selection(const std::vector<theory::SelectionMetrics>& rows,
                                   DocumentRecord& record) {
    record.precision.resize(rows.size());
    record.recall.resize(rows.size());
    record.f_rmax.resize(rows.size());
    record.f_rmin.resize(rows.size());
    for (std::size_t s = 0; s < rows.size(); ++s) {
        precision_[s].add(rows[s].precision_at_rmax);
        recall_[s].add(rows[s].recall_at_rmin);
        fmax_[s].add(rows[s].f_at_rmax);
        fmin_[s].add(rows[s].f_at_rmin);
        exact_decisions_[s] += rows[s].exact_decisions;
        record.precision[s] = static_cast<float>(rows[s].precision_at_rmax);
        record.recall[s] = static_cast<float>(rows[s].recall_at_rmin);
        record.f_rmax[s] = static_cast<float>(rows[s].f_at_rmax);
        record.f_rmin[s] = static_cast<float>(rows[s].f_at_rmin);
    }
}

// Figure 7: s(N) in rank order, with the sink or the last token left out.
void HeadStatistics::add_diagnostics(const DocumentGeometry& doc, DocumentRecord& record) {
    const int n = settings_.context, last = n - 1, d = doc.d;
    const auto& alpha = doc.tokens.alpha;
    record.cos_s_v0.assign(settings_.sizes.size(), 0.0f);
    record.cos_s_vL.assign(settings_.sizes.size(), 0.0f);
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(doc.tokens, settings_.ranking));
    std::vector<double> s_vec(d, 0.0);
    bool has_sink = false, has_last = false;
    std::size_t next = 0;
    for (int k = 0; k < n && next < settings_.sizes.size(); ++k) {
        const int token = order[k];
        for (int t = 0; t < d; ++t)
            s_vec[t] += alpha[token] * doc.row(token)[t];
        has_sink = has_sink || token == 0;
        has_last = has_last || token == last;
        while (next < settings_.sizes.size() && settings_.sizes[next] == k + 1) {
            const double s_norm = theory::euclidean_norm(s_vec.data(), d);
            double without_sink = 0, without_last = 0;
            for (int t = 0; t < d; ++t) {
                const double a = s_vec[t] - (has_sink ? alpha[0] * doc.row(0)[t] : 0.0);
                const double b = s_vec[t] - (has_last ? alpha[last] * doc.row(last)[t] : 0.0);
                without_sink += a * a;
                without_last += b * b;
            }
            const double to_sink = cosine(s_vec.data(), s_norm, doc.row(0), doc.norm[0], d),
                         to_last = cosine(s_vec.data(), s_norm, doc.row(last), doc.norm[last], d);
            auto& dg = diag_[next];
            dg[0].add(s_norm);
            dg[1].add(std::sqrt(without_sink));
            dg[2].add(std::sqrt(without_last));
            dg[3].add(to_sink);
            dg[4].add(to_last);
            record.cos_s_v0[next] = static_cast<float>(to_sink);
            record.cos_s_vL[next] = static_cast<float>(to_last);
            ++next;
        }
    }
}

// Every exact field once, in a fixed order: this order is the saved layout.
template <class Self, class Visit>
void HeadStatistics::visit_state(Self& self, Visit&& visit) {
    visit(self.documents_);
    for (auto* sums : {&self.norm_sum_, &self.alpha_sum_, &self.contrib_sum_, &self.lag_sum_})
        for (auto& x : *sums)
            visit(x.fixed);
    for (auto* x : {&self.pooled_norm_, &self.pooled_norm_sq_, &self.rho0_sum_, &self.sink_mass_,
                    &self.last_mass_, &self.m_sink_, &self.m_last_, &self.m_rest_})
        visit(x->fixed);
    visit(self.pooled_count_);
    for (auto& pairs : self.lag_pairs_)
        visit(pairs);
    for (auto* moments : {&self.precision_, &self.recall_, &self.fmax_, &self.fmin_}) {
        for (auto& m : *moments) {
            visit(m.count);
            visit(m.sum);
            visit(m.sum_squares);
        }
    }
    for (auto& row : self.diag_)
        for (auto& x : row)
            visit(x.fixed);
    for (auto& count : self.exact_decisions_)
        visit(count);
    // Only with --queries (empty otherwise, so the state of a final-row run is unchanged).
    for (auto& bin : self.by_length_) {
        visit(bin.queries);
        for (auto* x :
             {&bin.lambda, &bin.rho0, &bin.sink_mass, &bin.m_sink, &bin.m_last, &bin.m_rest})
            visit(x->fixed);
        for (auto* moments : {&bin.precision, &bin.recall})
            for (auto& m : *moments) {
                visit(m.count);
                visit(m.sum);
                visit(m.sum_squares);
            }
    }
}

void HeadStatistics::save(std::vector<std::int64_t>& words) const {
    visit_state(*this, [&](const auto& field) {
        if constexpr (sizeof(field) == 16) {
            const auto bits = static_cast<UInt128>(field);
            words.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(bits >> 64)));
            words.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(bits)));
        } else {
            words.push_back(field);
        }
    });
}

std::size_t HeadStatistics::saved_words() const {
    std::size_t count = 0;
    visit_state(*this, [&](const auto& field) { count += sizeof(field) == 16 ? 2 : 1; });
    return count;
}

void HeadStatistics::load(const std::int64_t*& cursor, const std::int64_t* end) {
    visit_state(*this, [&](auto& field) {
        constexpr std::ptrdiff_t needed = sizeof(field) == 16 ? 2 : 1;
        if (end - cursor < needed)
            throw std::invalid_argument("HeadStatistics::load: the saved state is truncated");
        if constexpr (sizeof(field) == 16) {
            const UInt128 bits =
                (static_cast<UInt128>(static_cast<std::uint64_t>(cursor[0])) << 64) |
                static_cast<std::uint64_t>(cursor[1]);
            field = static_cast<Int128>(bits);
        } else {
            field = cursor[0];
        }
        cursor += needed;
    });
}

void HeadStatistics::merge(const HeadStatistics& other) {
    if (other.settings_.context != settings_.context ||
        other.settings_.max_lag != settings_.max_lag || other.settings_.sizes != settings_.sizes ||
        other.settings_.positions != settings_.positions ||
        other.by_length_.size() != by_length_.size())
        throw std::invalid_argument("HeadStatistics::merge: different settings");
    // Field-wise integer addition, in the order of the saved layout.
    std::vector<Int128> theirs;
    visit_state(other, [&](const auto& field) { theirs.push_back(field); });
    std::size_t k = 0;
    visit_state(*this, [&](auto& field) {
        using Field = std::remove_reference_t<decltype(field)>;
        field = static_cast<Field>(field + static_cast<Field>(theirs[k++]));
    });
}

bool HeadStatistics::operator==(const HeadStatistics& other) const {
    std::vector<std::int64_t> a, b;
    save(a);
    other.save(b);
    return a == b;
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
    return statistics_kernels::median_of(std::vector<double>(profile.begin() + 1, profile.end()));
}

double HeadStatistics::cv_positional() const {
    const auto profile = norm_by_position();
    return cv_of(std::vector<double>(profile.begin() + 1, profile.end()));
}

double HeadStatistics::cv_pooled() const {
    if (pooled_count_ == 0) return 0;
    const double mean_norm = pooled_norm_.value() / pooled_count_;
    const double variance =
        std::max(pooled_norm_sq_.value() / pooled_count_ - mean_norm * mean_norm, 0.0);
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
    return lag_pairs_.at(lag) > 0 ? lag_sum_[lag].value() / lag_pairs_[lag] : std::nan("");
}

std::int64_t HeadStatistics::pairs_at_lag(int lag) const {
    return lag_pairs_.at(lag);
}

std::string HeadStatistics::regime() const {
    return theory::to_string(theory::classify_head(m_sink(), m_last(), m_rest()));
}

namespace {
// larger / smaller for larger >= smaller >= 0, defined at smaller = 0 (a tie at 0 is 1).
double ordered_ratio(double larger, double smaller) {
    if (smaller > 0) return larger / smaller;
    return larger > 0 ? std::numeric_limits<double>::infinity() : 1.0;
}
}  // namespace

double HeadStatistics::regime_margin() const {
    const double last = m_last(), lower = std::min(m_sink(), m_rest()),
                 upper = std::max(m_sink(), m_rest());
    const theory::HeadRegime regime = theory::classify_head(m_sink(), last, m_rest());
    if (regime == theory::HeadRegime::retriever) return ordered_ratio(last, upper);
    if (regime == theory::HeadRegime::reset) return ordered_ratio(lower, last);
    return std::min(ordered_ratio(last, lower), ordered_ratio(upper, last));
}

}  // namespace attngeo::empirical
