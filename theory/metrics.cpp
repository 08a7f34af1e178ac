// Selection metrics: the plain per-N reference and the certified all-N Gram path.
// See metrics.hpp; the error-bound argument is spelled out above GramDecider.
#include "theory/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace attngeo::theory {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUnitRoundoff = 0x1p-53;
constexpr double kCosineEpsilon = 1e-12;  // SPEC §2: 1e-12 in the cosine denominator

[[noreturn]] void fail(const char* function, const std::string& what) {
    throw std::domain_error(std::string(function) + ": " + what);
}

void finish(SelectionMetrics& m, int n) {
    if (m.N == n) {  // nothing left out: P = R = F = 1 by convention
        m.r_min = kInf;
        m.K_in = n;
        m.K_out = 0;
    }
    m.precision_at_rmax = static_cast<double>(m.N) / (m.N + m.K_out);
    m.recall_at_rmin = static_cast<double>(m.K_in) / m.N;
    m.f_at_rmax = f_score(m.precision_at_rmax, 1.0);
    m.f_at_rmin = f_score(1.0, m.recall_at_rmin);
}

void check_sizes(const std::vector<int>& sizes, int n, const char* function) {
    for (int N : sizes) {
        if (N < 1 || N > n) {
            fail(function, "selection size N = " + std::to_string(N) + " outside 1.." +
                               std::to_string(n));
        }
    }
}

}  // namespace

Ranking parse_ranking(const std::string& text) {
    if (text == "attn") return Ranking::attention;
    if (text == "contrib") return Ranking::contribution;
    throw std::domain_error("parse_ranking: '" + text + "', expected attn or contrib");
}

Distance parse_distance(const std::string& text) {
    if (text == "euclidean") return Distance::euclidean;
    if (text == "cosine") return Distance::cosine;
    throw std::domain_error("parse_distance: '" + text + "', expected euclidean or cosine");
}

const char* to_string(Ranking ranking) {
    return ranking == Ranking::attention ? "attn" : "contrib";
}
const char* to_string(Distance distance) {
    return distance == Distance::euclidean ? "euclidean" : "cosine";
}

double f_score(double precision, double recall) {
    const double sum = precision + recall;
    return sum > 0 ? 2 * precision * recall / sum : 0.0;
}

double squared_distance(const double* s, const double* y, int d) {
    double sum = 0;
    for (int t = 0; t < d; ++t) {
        const double diff = s[t] - y[t];
        sum += diff * diff;
    }
    return sum;
}

double euclidean_norm(const double* x, int d) {
    double sum = 0;
    for (int t = 0; t < d; ++t) sum += x[t] * x[t];
    return std::sqrt(sum);
}

double cosine_distance(const double* s, double s_norm, const double* y, int d) {
    double dot = 0;
    for (int t = 0; t < d; ++t) dot += y[t] * s[t];
    return 1.0 - dot / (euclidean_norm(y, d) * s_norm + kCosineEpsilon);
}

void validate_token_geometry(const TokenGeometry& tokens, const char* function) {
    const auto n = tokens.alpha.size();
    if (n < 1) fail(function, "no tokens (n = 0)");
    if (tokens.values.rows() != n) {
        fail(function, "alpha has " + std::to_string(n) + " entries but values has " +
                           std::to_string(tokens.values.rows()) + " rows");
    }
    if (tokens.values.cols() < 1) fail(function, "value dimension d = 0");
    for (Eigen::Index i = 0; i < n; ++i) {
        if (!std::isfinite(tokens.alpha[i]) || tokens.alpha[i] < 0) {
            fail(function, "alpha[" + std::to_string(i) + "] = " +
                               std::to_string(tokens.alpha[i]) + ", expected finite and >= 0");
        }
    }
    if (!tokens.values.allFinite()) fail(function, "values contain NaN or inf");
}

Eigen::VectorXd selection_scores(const TokenGeometry& tokens, Ranking ranking) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    Eigen::VectorXd scores = tokens.alpha;
    if (ranking == Ranking::contribution) {
        for (int i = 0; i < n; ++i) scores[i] *= euclidean_norm(tokens.values.row(i).data(), d);
    }
    return scores;
}

std::vector<int> selection_order(const Eigen::VectorXd& scores) {
    std::vector<int> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return scores[a] > scores[b]; });
    return order;
}

// ---------------------------------------------------------------------------------------------
// Reference: every N from scratch, every distance directly.

std::vector<SelectionMetrics> selection_metrics_reference(const TokenGeometry& tokens,
                                                          const std::vector<int>& sizes,
                                                          Ranking ranking, Distance distance) {
    validate_token_geometry(tokens, "selection_metrics_reference");
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    check_sizes(sizes, n, "selection_metrics_reference");

    // Independent of selection_order: a total order (score desc, index asc) with std::sort.
    const Eigen::VectorXd scores = selection_scores(tokens, ranking);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
    });
    std::vector<char> selected(n);

    RowMatrix y(n, d);
    for (int i = 0; i < n; ++i) y.row(i) = tokens.alpha[i] * tokens.values.row(i);

    std::vector<SelectionMetrics> rows;
    std::vector<double> s(d), D(n);
    for (int N : sizes) {
        std::fill(selected.begin(), selected.end(), 0);
        std::fill(s.begin(), s.end(), 0.0);
        for (int k = 0; k < N; ++k) {
            selected[order[k]] = 1;
            for (int t = 0; t < d; ++t) s[t] += y(order[k], t);
        }
        const double s_norm = euclidean_norm(s.data(), d);
        for (int l = 0; l < n; ++l) {
            D[l] = distance == Distance::euclidean
                       ? squared_distance(s.data(), y.row(l).data(), d)
                       : cosine_distance(s.data(), s_norm, y.row(l).data(), d);
        }
        double max_in = -kInf, min_out = kInf;
        for (int l = 0; l < n; ++l) {
            if (selected[l]) max_in = std::max(max_in, D[l]);
            else min_out = std::min(min_out, D[l]);
        }
        SelectionMetrics m;
        m.N = N;
        m.r_max = std::sqrt(std::max(max_in, 0.0));
        m.r_min = N < n ? std::sqrt(std::max(min_out, 0.0)) : kInf;
        for (int l = 0; l < n; ++l) {
            if (selected[l] && D[l] <= min_out) ++m.K_in;
            if (!selected[l] && D[l] <= max_in) ++m.K_out;
        }
        finish(m, n);
        rows.push_back(m);
    }
    return rows;
}

// ---------------------------------------------------------------------------------------------
// Gram path.
//
// For selection size N (tokens ranked, I_N = rows 0..N−1) the Gram path evaluates
//   D_ℓ ≈ ‖s‖² + G_ℓℓ − 2 c_ℓ,   c_ℓ = Σ_{k<N} G_kℓ,   ‖s‖² updated as ‖s‖² + 2c_k + G_kk,
// while the reference evaluates D_ℓ = Σ_t (s_t − y_ℓt)² with s summed in rank order. With
// A = Σ_{k<N} ‖y_k‖, u = 2⁻⁵³ and γ_m = m·u/(1 − m·u), standard bounds give
//   |G̃_kℓ − G_kℓ| ≤ γ_d ‖y_k‖‖y_ℓ‖,  |c̃_ℓ − c_ℓ| ≤ (γ_N + γ_d) A‖y_ℓ‖,
//   |‖s‖²~ − ‖s‖²| ≤ (γ_2N+γ_d) A²,  |D_ref − D| ≤ (2γ_N + γ_{d+3}) (A + ‖y_ℓ‖)²,
// so |D_gram − D_ref| ≤ E_ℓ = 2u(2d + 8N + 32)(A + ‖y_ℓ‖)² (a factor ~2 to spare). Every
// comparison whose outcome those intervals cannot decide is redone with the reference kernel
// on the same running s, which makes the result bit-identical to the reference.
// The cosine distance gets the analogous bound on a quotient (see cosine_error_bound).
class GramDecider {
public:
    GramDecider(const RowMatrix& ranked, const Eigen::MatrixXd& gram, Distance distance)
        : ranked_(ranked),
          gram_(gram),
          distance_(distance),
          n_(static_cast<int>(ranked.rows())),
          d_(static_cast<int>(ranked.cols())),
          running_dot_(Eigen::VectorXd::Zero(n_)),
          s_(d_, 0.0),
          row_norm_(n_),
          approx_(n_),
          bound_(n_),
          exact_(n_, kUnset) {
        for (int l = 0; l < n_; ++l) row_norm_[l] = euclidean_norm(ranked_.row(l).data(), d_);
    }

    // Adds ranked token N−1 to the selection, making the state that of size N.
    void add_next() {
        const int k = size_++;
        s_norm2_approx_ += 2 * running_dot_[k] + gram_(k, k);
        for (int l = 0; l < k; ++l) running_dot_[l] += gram_(k, l);  // lower triangle only
        for (int l = k; l < n_; ++l) running_dot_[l] += gram_(l, k);
        const double* y = ranked_.row(k).data();
        for (int t = 0; t < d_; ++t) s_[t] += y[t];
        selected_norm_sum_ += row_norm_[k];
        s_norm_exact_ = -1;
    }

    SelectionMetrics evaluate() {
        const int N = size_;
        for (int l : touched_) exact_[l] = kUnset;
        touched_.clear();
        approximate_all();

        SelectionMetrics m;
        m.N = N;
        const double max_in = extreme(0, N, /*want_max=*/true);
        m.r_max = std::sqrt(std::max(max_in, 0.0));
        if (N < n_) {
            const double min_out = extreme(N, n_, /*want_max=*/false);
            m.r_min = std::sqrt(std::max(min_out, 0.0));
            m.K_out = count_at_most(N, n_, max_in);
            m.K_in = count_at_most(0, N, min_out);
        }
        finish(m, n_);
        return m;
    }

private:
    static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

    void approximate_all() {
        const int N = size_;
        const double factor = 2 * kUnitRoundoff * (2.0 * d_ + 8.0 * N + 32.0);
        const double A = selected_norm_sum_;
        if (distance_ == Distance::euclidean) {
            for (int l = 0; l < n_; ++l) {
                approx_[l] = s_norm2_approx_ + gram_(l, l) - 2 * running_dot_[l];
                const double scale = A + row_norm_[l];
                bound_[l] = factor * scale * scale;
            }
            return;
        }
        const double s_norm2 = std::max(s_norm2_approx_, 0.0);
        const double s_norm = std::sqrt(s_norm2);
        const double s_norm2_error = factor * A * A;
        const double s_norm_error = s_norm > 0 ? std::min(std::sqrt(s_norm2_error), s_norm2_error / s_norm)
                                              : std::sqrt(s_norm2_error);
        for (int l = 0; l < n_; ++l) {
            const double y_norm = std::sqrt(std::max(gram_(l, l), 0.0));
            const double y_norm_error = factor * row_norm_[l];
            const double dot = running_dot_[l];
            const double dot_error = factor * A * row_norm_[l];
            const double denominator = y_norm * s_norm + kCosineEpsilon;
            const double denominator_error = y_norm * s_norm_error + s_norm * y_norm_error +
                                             s_norm_error * y_norm_error +
                                             4 * kUnitRoundoff * denominator;
            const double quotient = dot / denominator;
            approx_[l] = 1.0 - quotient;
            const double low = denominator - denominator_error;
            bound_[l] = low > 0 ? (dot_error + std::abs(quotient) * denominator_error) / low +
                                      8 * kUnitRoundoff * (1 + std::abs(quotient))
                                : kInf;
        }
    }

    double exact(int l) {
        if (std::isnan(exact_[l])) {
            const double* y = ranked_.row(l).data();
            if (distance_ == Distance::euclidean) {
                exact_[l] = squared_distance(s_.data(), y, d_);
            } else {
                if (s_norm_exact_ < 0) s_norm_exact_ = euclidean_norm(s_.data(), d_);
                exact_[l] = cosine_distance(s_.data(), s_norm_exact_, y, d_);
            }
            touched_.push_back(l);
        }
        return exact_[l];
    }

    // Exact max (or min) of D over rows [begin, end): only rows whose interval can reach the
    // extreme are evaluated exactly.
    double extreme(int begin, int end, bool want_max) {
        double threshold = want_max ? -kInf : kInf;
        for (int l = begin; l < end; ++l) {
            threshold = want_max ? std::max(threshold, approx_[l] - bound_[l])
                                 : std::min(threshold, approx_[l] + bound_[l]);
        }
        double best = want_max ? -kInf : kInf;
        for (int l = begin; l < end; ++l) {
            const bool candidate = want_max ? approx_[l] + bound_[l] >= threshold
                                            : approx_[l] - bound_[l] <= threshold;
            if (candidate) best = want_max ? std::max(best, exact(l)) : std::min(best, exact(l));
        }
        return best;
    }

    int count_at_most(int begin, int end, double limit) {
        int count = 0;
        for (int l = begin; l < end; ++l) {
            if (approx_[l] + bound_[l] <= limit) ++count;
            else if (approx_[l] - bound_[l] > limit) continue;
            else if (exact(l) <= limit) ++count;
        }
        return count;
    }

    const RowMatrix& ranked_;
    const Eigen::MatrixXd& gram_;
    Distance distance_;
    int n_, d_;
    int size_ = 0;
    Eigen::VectorXd running_dot_;  // [n] c_ℓ = ⟨s(N), y_ℓ⟩ from G
    std::vector<double> s_;        // [d] s(N) summed in rank order, as the reference does
    std::vector<double> row_norm_;  // [n] ‖y_ℓ‖
    double s_norm2_approx_ = 0;
    double selected_norm_sum_ = 0;  // A = Σ_{k<N} ‖y_k‖
    double s_norm_exact_ = -1;
    std::vector<double> approx_, bound_, exact_;  // [n] each
    std::vector<int> touched_;
};

void selection_metrics_from_gram(const RowMatrix& ranked, const Eigen::MatrixXd& gram,
                                 const std::vector<int>& sizes, Distance distance,
                                 std::vector<SelectionMetrics>& out) {
    const int n = static_cast<int>(ranked.rows());
    check_sizes(sizes, n, "selection_metrics_from_gram");
    if (gram.rows() != n || gram.cols() != n) {
        fail("selection_metrics_from_gram", "Gram matrix is " + std::to_string(gram.rows()) +
                                                "x" + std::to_string(gram.cols()) +
                                                ", expected " + std::to_string(n) + "x" +
                                                std::to_string(n));
    }
    out.clear();
    GramDecider decider(ranked, gram, distance);
    std::size_t next = 0;
    std::vector<int> wanted(sizes);
    std::sort(wanted.begin(), wanted.end());
    std::vector<SelectionMetrics> sorted_rows;
    for (int N = 1; N <= n && next < wanted.size(); ++N) {
        decider.add_next();
        if (N != wanted[next]) continue;
        const SelectionMetrics m = decider.evaluate();
        while (next < wanted.size() && wanted[next] == N) {
            sorted_rows.push_back(m);
            ++next;
        }
    }
    // Return rows in the caller's order.
    for (int N : sizes) {
        const auto it = std::lower_bound(wanted.begin(), wanted.end(), N);
        out.push_back(sorted_rows[static_cast<std::size_t>(it - wanted.begin())]);
    }
}

std::vector<SelectionMetrics> selection_metrics_gram(const TokenGeometry& tokens,
                                                     const std::vector<int>& sizes,
                                                     Ranking ranking, Distance distance) {
    validate_token_geometry(tokens, "selection_metrics_gram");
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    check_sizes(sizes, n, "selection_metrics_gram");
    const std::vector<int> order = selection_order(selection_scores(tokens, ranking));
    RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k) ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(n, n);
    gram.selfadjointView<Eigen::Lower>().rankUpdate(ranked);
    std::vector<SelectionMetrics> rows;
    selection_metrics_from_gram(ranked, gram, sizes, distance, rows);
    return rows;
}

BallMetrics metrics_at_radius(const TokenGeometry& tokens, int N, double radius, Ranking ranking,
                              Distance distance) {
    validate_token_geometry(tokens, "metrics_at_radius");
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    check_sizes({N}, n, "metrics_at_radius");
    if (!(radius >= 0)) fail("metrics_at_radius", "radius = " + std::to_string(radius) + ", expected >= 0");
    const std::vector<int> order = selection_order(selection_scores(tokens, ranking));
    std::vector<char> selected(n, 0);
    RowMatrix y(n, d);
    for (int i = 0; i < n; ++i) y.row(i) = tokens.alpha[i] * tokens.values.row(i);
    std::vector<double> s(d, 0.0);
    for (int k = 0; k < N; ++k) {
        selected[order[k]] = 1;
        for (int t = 0; t < d; ++t) s[t] += y(order[k], t);
    }
    const double s_norm = euclidean_norm(s.data(), d);
    BallMetrics b;
    b.N = N;
    b.radius = radius;
    for (int l = 0; l < n; ++l) {
        const double D = distance == Distance::euclidean
                             ? squared_distance(s.data(), y.row(l).data(), d)
                             : cosine_distance(s.data(), s_norm, y.row(l).data(), d);
        // Compared as radii (√D ≤ r) so that r = r_max or r_min reported by the other
        // functions classifies their own extreme tokens the same way.
        if (std::sqrt(std::max(D, 0.0)) <= radius) {
            ++(selected[l] ? b.selected_inside : b.unselected_inside);
        }
    }
    const int inside = b.selected_inside + b.unselected_inside;
    b.precision = inside > 0 ? static_cast<double>(b.selected_inside) / inside : 1.0;
    b.recall = static_cast<double>(b.selected_inside) / N;
    b.f = f_score(b.precision, b.recall);
    return b;
}

}  // namespace attngeo::theory
