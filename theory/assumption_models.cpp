// Assumption models and Table-2 regimes; see assumption_models.hpp.
#include "theory/assumption_models.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/format.hpp"

#include "theory/metrics.hpp"

namespace attngeo::theory {
namespace {

void check_length(int L, const char* function) {
    if (L < 1) throw_domain_error(function, "L = " + std::to_string(L) + ", expected L >= 1");
}

}  // namespace

void validate_assumption3(const Assumption3Profile& p, const char* function) {
    check_length(p.L, function);
    if (!(p.p_sink > 0 && p.p_sink < 1))
        throw_domain_error(function,
                           "p_sink = " + format_double(p.p_sink) + ", expected 0 < p_sink < 1");
    if (!(p.eta >= 0) || !std::isfinite(p.eta))
        throw_domain_error(function, "eta = " + format_double(p.eta) + ", expected eta >= 0");
    if (p.T1 < p.T2 && !(p.eta < 1)) {
        throw_domain_error(function,
                           "eta = " + format_double(p.eta) +
                               ", expected eta < 1 when T1 < T2 (weights must stay positive)");
    }
    if (!(0 <= p.T1 && p.T1 <= p.T2 && p.T2 <= p.L)) {
        throw_domain_error(function,
                           "T1 = " + std::to_string(p.T1) + ", T2 = " + std::to_string(p.T2) +
                               ", L = " + std::to_string(p.L) + ": expected 0 <= T1 <= T2 <= L");
    }
    if (!std::isfinite(p.omega))
        throw_domain_error(function,
                           "omega = " + format_double(p.omega) + ", expected a finite number");
}

double assumption3_shape(const Assumption3Profile& p, int i) {
    if (i <= p.T1) return 1.0;
    if (i <= p.T2) return 1.0 + p.eta * std::cos(p.omega * i);
    return std::exp(p.eta * (i - p.T2));
}

double assumption3_p_base(const Assumption3Profile& p) {
    validate_assumption3(p, "assumption3_p_base");
    double total = 0;
    for (int i = 1; i <= p.L; ++i)
        total += assumption3_shape(p, i);
    if (!std::isfinite(total))
        throw_domain_error("assumption3_p_base",
                           "the exponential phase overflows (eta*(L-T2) too large)");
    return (1.0 - p.p_sink) / total;
}

Eigen::VectorXd assumption3_weights(const Assumption3Profile& p) {
    const double p_base = assumption3_p_base(p);
    Eigen::VectorXd alpha(p.L + 1);
    alpha[0] = p.p_sink;
    for (int i = 1; i <= p.L; ++i)
        alpha[i] = p_base * assumption3_shape(p, i);
    return alpha;
}

Eigen::VectorXd uniform_weights(int L) {
    check_length(L, "uniform_weights");
    return Eigen::VectorXd::Constant(L + 1, 1.0 / (L + 1));
}

Eigen::VectorXd zipf_weights(int L, double exponent) {
    check_length(L, "zipf_weights");
    if (!(exponent >= 0) || !std::isfinite(exponent))
        throw_domain_error("zipf_weights",
                           "exponent s = " + format_double(exponent) + ", expected s >= 0");
    std::vector<double> w(L + 1);
    for (int i = 0; i <= L; ++i)
        w[i] = std::pow(i + 1.0, -exponent);
    return normalized_weights(w, "zipf_weights");
}

Eigen::VectorXd normalized_weights(const std::vector<double>& weights, const char* function) {
    if (weights.size() < 2)
        throw_domain_error(function, "need at least 2 weights (the sink and one token), got " +
                                         std::to_string(weights.size()));
    double total = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        if (!std::isfinite(weights[i]) || weights[i] < 0) {
            throw_domain_error(function, "weight " + std::to_string(i) + " = " +
                                             format_double(weights[i]) +
                                             ", expected finite and >= 0");
        }
        total += weights[i];
    }
    if (!(total > 0)) throw_domain_error(function, "weights sum to 0, expected a positive total");
    Eigen::VectorXd alpha(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i)
        alpha[i] = weights[i] / total;
    return alpha;
}

ProfileSpec parse_profile_spec(const std::string& text) {
    ProfileSpec spec;
    if (text == "assumption3") return spec;
    if (text == "uniform") {
        spec.kind = ProfileSpec::Kind::uniform;
        return spec;
    }
    if (text.rfind("zipf:", 0) == 0) {
        spec.kind = ProfileSpec::Kind::zipf;
        const std::string value = text.substr(5);
        char* end = nullptr;
        spec.zipf_exponent = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || !(spec.zipf_exponent >= 0) ||
            !std::isfinite(spec.zipf_exponent)) {
            throw_domain_error("parse_profile_spec",
                               "'" + text + "': expected zipf:s with a finite s >= 0");
        }
        return spec;
    }
    if (text.rfind("file:", 0) == 0 && text.size() > 5) {
        spec.kind = ProfileSpec::Kind::file;
        spec.path = text.substr(5);
        return spec;
    }
    throw_domain_error("parse_profile_spec",
                       "'" + text + "': expected assumption3, uniform, zipf:s or file:PATH");
}

std::string to_string(const ProfileSpec& spec) {
    switch (spec.kind) {
        case ProfileSpec::Kind::assumption3:
            return "assumption3";
        case ProfileSpec::Kind::uniform:
            return "uniform";
        case ProfileSpec::Kind::zipf:
            return "zipf:" + format_double(spec.zipf_exponent);
        case ProfileSpec::Kind::file:
            return "file:" + spec.path;
    }
    return "?";
}

Eigen::VectorXd assumption1_norms(int L, double C, double lambda) {
    check_length(L, "assumption1_norms");
    if (!(C > 0) || !std::isfinite(C))
        throw_domain_error("assumption1_norms", "C = " + format_double(C) + ", expected C > 0");
    if (!(lambda > 0 && lambda < 1))
        throw_domain_error("assumption1_norms",
                           "lambda = " + format_double(lambda) + ", expected 0 < lambda < 1");
    Eigen::VectorXd norms = Eigen::VectorXd::Constant(L + 1, C);
    norms[0] = lambda * C;
    return norms;
}

Eigen::MatrixXd exponential_cosine_matrix(int L, double beta, double rho0) {
    check_length(L, "exponential_cosine_matrix");
    if (!(beta > 0) || !std::isfinite(beta))
        throw_domain_error("exponential_cosine_matrix",
                           "beta = " + format_double(beta) + ", expected beta > 0");
    if (!(std::abs(rho0) <= 1))
        throw_domain_error("exponential_cosine_matrix",
                           "rho0 = " + format_double(rho0) + ", expected -1 <= rho0 <= 1");
    const int n = L + 1;
    std::vector<double> by_lag(n);
    for (int k = 0; k < n; ++k)
        by_lag[k] = std::exp(-beta * k);
    Eigen::MatrixXd cosine(n, n);
    for (int k = 1; k < n; ++k)  // column by column, as Eigen stores them: 10× at n = 15,000
        for (int j = 1; j < n; ++j)
            cosine(j, k) = by_lag[std::abs(j - k)];
    for (int k = 1; k < n; ++k)
        cosine(0, k) = cosine(k, 0) = rho0;
    cosine(0, 0) = 1.0;
    return cosine;
}

namespace {

// Whether c passes every check of validate_cosine_matrix, read column by column and in 32 × 32
// tiles for the symmetry (the element-wise loop there strides across rows of c): compare runs
// this once per head on matrices of context², and only a failing matrix takes the loop that
// names the first bad entry.
bool valid_cosine_matrix(const Eigen::MatrixXd& c) {
    const Eigen::Index n = c.rows();
    for (Eigen::Index k = 0; k < n; ++k) {
        const double* column = c.col(k).data();
        for (Eigen::Index j = 0; j < n; ++j)
            if (!(std::abs(column[j]) <= 1 + 1e-9)) return false;  // NaN fails too
        if (std::abs(column[k] - 1) > 1e-9) return false;
    }
    constexpr Eigen::Index kTile = 32;
    for (Eigen::Index j0 = 0; j0 < n; j0 += kTile)
        for (Eigen::Index k0 = j0; k0 < n; k0 += kTile)
            for (Eigen::Index k = k0; k < std::min(n, k0 + kTile); ++k)
                for (Eigen::Index j = j0; j < std::min(n, j0 + kTile); ++j)
                    if (std::abs(c(j, k) - c(k, j)) > 1e-9) return false;
    return true;
}

}  // namespace

void validate_cosine_matrix(const Eigen::MatrixXd& c, const char* function) {
    if (c.rows() == c.cols() && valid_cosine_matrix(c)) return;
    if (c.rows() != c.cols())
        throw_domain_error(function, "cosine matrix is " + std::to_string(c.rows()) + "x" +
                                         std::to_string(c.cols()) + ", expected square");
    const auto n = c.rows();
    auto where = [&](Eigen::Index j, Eigen::Index k) {
        return "cosine[" + std::to_string(j) + "][" + std::to_string(k) +
               "] = " + format_double(c(j, k));
    };
    for (Eigen::Index j = 0; j < n; ++j) {
        for (Eigen::Index k = 0; k < n; ++k) {
            const double v = c(j, k);
            if (!std::isfinite(v) || std::abs(v) > 1 + 1e-9)
                throw_domain_error(function, where(j, k) + ", expected within [-1, 1]");
            if (j == k && std::abs(v - 1) > 1e-9)
                throw_domain_error(function, where(j, k) + ", expected 1 on the diagonal");
            if (std::abs(v - c(k, j)) > 1e-9) {
                throw_domain_error(function, where(j, k) + " differs from cosine[" +
                                                 std::to_string(k) + "][" + std::to_string(j) +
                                                 "], expected a symmetric matrix");
            }
        }
    }
}

const char* to_string(Regime regime) {
    switch (regime) {
        case Regime::I:
            return "I";
        case Regime::II:
            return "II";
        case Regime::III:
            return "III";
        case Regime::IV:
            return "IV";
        case Regime::V:
            return "V";
    }
    return "?";
}

double fitted_regime_iv_tolerance(double eta, double rmse_log) {
    if (!(eta >= 0) || !(rmse_log >= 0))
        throw_domain_error("fitted_regime_iv_tolerance",
                           "eta = " + format_double(eta) +
                               ", rmse_log = " + format_double(rmse_log) + ": expected both >= 0");
    return std::max(kExactRegimeIVTolerance, std::min(eta / 2, std::expm1(rmse_log)));
}

std::vector<Regime> regimes_by_size(const Eigen::VectorXd& alpha, double p_base, double eta,
                                    double iv_tolerance) {
    if (!(p_base > 0) || !(eta >= 0) || !(iv_tolerance >= 0))
        throw_domain_error("regimes_by_size",
                           "p_base = " + format_double(p_base) + ", eta = " + format_double(eta) +
                               ", tolerance = " + format_double(iv_tolerance) +
                               ": expected p_base > 0, eta >= 0 and tolerance >= 0");
    const std::vector<int> order = selection_order(alpha);
    std::vector<Regime> regimes(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const double a = alpha[order[k]];
        if (k == 0 && order[0] == 0)
            regimes[k] = Regime::I;
        else if (std::abs(a - p_base) <= iv_tolerance * p_base)
            regimes[k] = Regime::IV;
        else if (a > p_base * (1 + eta))
            regimes[k] = Regime::II;
        else if (a > p_base)
            regimes[k] = Regime::III;
        else
            regimes[k] = Regime::V;
    }
    return regimes;
}

RegimeBoundaries regime_boundaries(const std::vector<Regime>& regimes) {
    RegimeBoundaries b;
    for (std::size_t k = 0; k < regimes.size(); ++k) {
        const int N = static_cast<int>(k) + 1;
        if (regimes[k] == Regime::III && b.m1 == 0) b.m1 = N;
        if (regimes[k] == Regime::IV && b.m2 == 0) b.m2 = N;
        if (regimes[k] == Regime::V && b.m3 == 0) b.m3 = N;
    }
    return b;
}

}  // namespace attngeo::theory
