// Envelopes over measured heads, κ per variant over all heads, agreement and violations; see
// envelopes.hpp. Per-head work runs in parallel and is reduced in head order (integers for the
// counts), so every output is the same for any thread count.
#include "compare/envelopes.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "compare/parallel_for.hpp"
#include "simulate/envelope.hpp"

namespace attngeo::compare {
namespace {

constexpr double kSlack = 1e-12;  // inside iff lower − slack ≤ value ≤ upper + slack
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kViolationsKept = 20;
// Measured mean cosines are float32 averages: a value up to 1e-6 past ±1 is rounding and is
// clamped; anything further is bad input.
constexpr double kCosineTolerance = 1e-6;

double clamp_cosine(double c) {
    return std::clamp(c, -1.0, 1.0);
}
// 0.1-decade grid (61 points on [1e-4, 1e2]), then ±0.1 at 0.01 and ±0.01 at 0.001 decades.
const std::vector<double> kKappaSteps = {0.1, 0.01, 0.001};
const theory::BoundVariant kVariants[3] = {theory::BoundVariant::paper,
                                           theory::BoundVariant::exact_mean,
                                           theory::BoundVariant::scale_invariant};

bool inside(double value, double lower, double upper) {
    return value >= lower - kSlack && value <= upper + kSlack;
}

// Distance outside [lower, upper]; 0 when inside (with the slack).
double excess(double value, double lower, double upper) {
    if (inside(value, lower, upper)) return 0;
    return value < lower ? lower - value : value - upper;
}

std::string head_name(const HeadInput& h) {
    return "layer " + std::to_string(h.layer) + " head " + std::to_string(h.head);
}

void validate_inputs(const std::vector<HeadInput>& heads, const EnvelopeSettings& settings) {
    const char* fn = "attngeo::compare::evaluate_envelopes";
    if (heads.empty()) throw InputError("compare envelopes: no heads to evaluate");
    if (!(settings.d >= 1)) throw_domain_error(fn, "d = " + format_double(settings.d) + " < 1");
    if (settings.kappa && !(*settings.kappa > 0 && std::isfinite(*settings.kappa)))
        throw_domain_error(
            fn, "kappa = " + format_double(*settings.kappa) + ", expected finite and > 0");
    const std::vector<int>& sizes = heads.front().sizes;
    if (sizes.empty()) throw InputError("compare envelopes: empty N grid");
    for (const HeadInput& h : heads) {
        const std::string who = "compare envelopes: " + head_name(h);
        const std::size_t n = h.alpha.size();
        if (h.sizes != sizes) throw InputError(who + ": N grid differs from the first head's");
        if (n < 2 || h.norms.size() != n)
            throw InputError(who + ": alpha has " + std::to_string(n) + " positions and norms " +
                             std::to_string(h.norms.size()) + ", expected equal and >= 2");
        for (int N : h.sizes)
            if (N < 1 || static_cast<std::size_t>(N) > n)
                throw InputError(who + ": N = " + std::to_string(N) + " outside 1.." +
                                 std::to_string(n));
        if (h.P_mean.size() != sizes.size() || h.R_mean.size() != sizes.size())
            throw InputError(who + ": P_mean/R_mean have " + std::to_string(h.P_mean.size()) + "/" +
                             std::to_string(h.R_mean.size()) + " values, expected " +
                             std::to_string(sizes.size()) + " (one per N)");
        for (std::size_t s = 0; s < sizes.size(); ++s)
            if (!std::isfinite(h.P_mean[s]) || !std::isfinite(h.R_mean[s]))
                throw InputError(who + ": P_mean/R_mean at N = " + std::to_string(sizes[s]) +
                                 " not finite");
        for (std::size_t i = 0; i < n; ++i)
            if (!(h.alpha[i] >= 0 && std::isfinite(h.alpha[i]) && h.norms[i] >= 0 &&
                  std::isfinite(h.norms[i])))
                throw InputError(who + ": alpha/norm at position " + std::to_string(i) + " = " +
                                 format_double(h.alpha[i]) + "/" + format_double(h.norms[i]) +
                                 ", expected finite and >= 0");
        if (!(std::abs(h.rho0) <= 1 + kCosineTolerance))
            throw InputError(who + ": rho0 = " + format_double(h.rho0) + ", expected in [-1, 1]");
        if (settings.cosines == CosineSource::parametric && !(h.beta >= 0 && std::isfinite(h.beta)))
            throw InputError(who + ": beta = " + format_double(h.beta) +
                             ", expected finite and >= 0");
        if (settings.cosines == CosineSource::plug_in) {
            if (h.cos_by_lag.empty())
                throw InputError(who + ": no measured cosines by lag for --cosines plug-in");
            for (std::size_t k = 0; k < h.cos_by_lag.size(); ++k)
                if (!(std::abs(h.cos_by_lag[k]) <= 1 + kCosineTolerance))
                    throw InputError(who + ": cos at lag " + std::to_string(k + 1) + " = " +
                                     format_double(h.cos_by_lag[k]) + ", expected in [-1, 1]");
        }
    }
}

struct HeadCounts {
    int inside = 0;
    double width = 0;  // Σ over N of (P upper − lower) + (R upper − lower)
};

HeadCounts count_head(const std::vector<theory::BoundRow>& rows, const HeadInput& h) {
    HeadCounts c;
    for (std::size_t s = 0; s < rows.size(); ++s) {
        const auto& b = rows[s];
        c.inside += inside(h.P_mean[s], b.precision_lower, b.precision_upper);
        c.inside += inside(h.R_mean[s], b.recall_lower, b.recall_upper);
        c.width += (b.precision_upper - b.precision_lower) + (b.recall_upper - b.recall_lower);
    }
    return c;
}

int lower_holding(const std::vector<theory::BoundRow>& rows, const HeadInput& h) {
    int holding = 0;
    for (std::size_t s = 0; s < rows.size(); ++s) {
        holding += h.P_mean[s] >= rows[s].precision_lower - kSlack;
        holding += h.R_mean[s] >= rows[s].recall_lower - kSlack;
    }
    return holding;
}

AgreementRow& scope_row(std::map<int, AgreementRow>& rows, int layer) {
    AgreementRow& row = rows[layer];
    row.layer = layer;
    return row;
}

}  // namespace

CosineSource parse_cosine_source(const std::string& text) {
    if (text == "parametric") return CosineSource::parametric;
    if (text == "plug-in") return CosineSource::plug_in;
    throw InputError("--cosines: '" + text + "', expected parametric or plug-in");
}

const char* to_string(CosineSource source) {
    return source == CosineSource::parametric ? "parametric" : "plug-in";
}

theory::HeadModel head_model(const HeadInput& h, CosineSource source) {
    const auto n = static_cast<Eigen::Index>(h.alpha.size());
    theory::HeadModel m;
    m.alpha = Eigen::Map<const Eigen::VectorXd>(h.alpha.data(), n);
    m.norms = Eigen::Map<const Eigen::VectorXd>(h.norms.data(), h.norms.size());
    // ρ_jk depends on the lag only (for j, k ≥ 1): one table, then a Toeplitz fill.
    std::vector<double> by_lag(std::max<Eigen::Index>(n, 1));
    by_lag[0] = 1;
    for (Eigen::Index lag = 1; lag < n; ++lag) {
        if (source == CosineSource::parametric) {
            by_lag[lag] = std::exp(-h.beta * static_cast<double>(lag));
        } else {
            // Decision: lags beyond the measured K take the value at K.
            const std::size_t k = std::min<std::size_t>(lag, h.cos_by_lag.size());
            by_lag[lag] = clamp_cosine(h.cos_by_lag[k - 1]);
        }
    }
    m.cosine.resize(n, n);
    for (Eigen::Index k = 0; k < n; ++k)
        for (Eigen::Index j = 0; j < n; ++j)
            m.cosine(j, k) = by_lag[j > k ? j - k : k - j];
    for (Eigen::Index j = 1; j < n; ++j)
        m.cosine(0, j) = m.cosine(j, 0) = clamp_cosine(h.rho0);
    return m;
}

EnvelopeResult evaluate_envelopes(const std::vector<HeadInput>& heads,
                                  const EnvelopeSettings& settings) {
    validate_inputs(heads, settings);
    const int threads = settings.threads > 0 ? settings.threads : omp_get_max_threads();
    const int H = static_cast<int>(heads.size());
    const std::vector<int>& sizes = heads.front().sizes;
    const int S = static_cast<int>(sizes.size());
    const double points = 2.0 * H * S;
    const double d = settings.d;

    EnvelopeResult result;
    result.cosines = settings.cosines;
    result.d = d;
    result.sizes = sizes;
    for (const HeadInput& h : heads) {
        result.layer.push_back(h.layer);
        result.head.push_back(h.head);
        result.P_mean.push_back(h.P_mean);
        result.R_mean.push_back(h.R_mean);
    }

    for (theory::BoundVariant variant : kVariants) {
        // κ-independent terms of every head (one variant at a time bounds the memory).
        std::vector<std::unique_ptr<theory::BoundTerms>> terms(H);
        parallel_for(H, threads, [&](int h) {
            terms[h] = std::make_unique<theory::BoundTerms>(head_model(heads[h], settings.cosines),
                                                            sizes, variant);
        });

        VariantResult v;
        v.variant = variant;
        if (settings.kappa) {
            v.kappa = *settings.kappa;
        } else if (std::isinf(d)) {
            v.kappa = 1;  // κ·d = ∞ whatever κ is: nothing to fit
        } else {
            auto score = [&](const std::vector<double>& kappas) {
                const std::size_t K = kappas.size();
                std::vector<HeadCounts> counts(static_cast<std::size_t>(H) * K);
                parallel_for(H, threads, [&](int h) {
                    for (std::size_t k = 0; k < K; ++k)
                        counts[h * K + k] = count_head(terms[h]->evaluate(d, kappas[k]), heads[h]);
                });
                std::vector<simulate::KappaAgreement> out(K);
                for (std::size_t k = 0; k < K; ++k) {
                    long inside_total = 0;
                    double width_total = 0;
                    for (int h = 0; h < H; ++h) {  // head order: the same sum for any threads
                        inside_total += counts[h * K + k].inside;
                        width_total += counts[h * K + k].width;
                    }
                    out[k].fraction = inside_total / points;
                    out[k].width = width_total / points;
                }
                return out;
            };
            v.kappa = simulate::fit_kappa_log_grid(score, kKappaSteps);
            v.kappa_fitted = true;
        }

        auto lower_fraction = [&](double kappa) {
            std::vector<int> holding(H);
            parallel_for(H, threads, [&](int h) {
                holding[h] =
                    lower_holding(terms[h]->evaluate(d, kappa, /*lower_only=*/true), heads[h]);
            });
            long total = 0;
            for (int x : holding)
                total += x;
            return total / points;
        };
        if (std::isinf(d)) {
            v.kappa_lower95 = v.lower_fraction_at_kappa_lower95 = kNaN;
        } else {
            v.kappa_lower95 =
                simulate::largest_kappa_where([&](double k) { return lower_fraction(k) >= 0.95; });
            v.lower_fraction_at_kappa_lower95 =
                std::isnan(v.kappa_lower95) ? kNaN : lower_fraction(v.kappa_lower95);
        }

        v.rows.assign(H, {});
        parallel_for(H, threads, [&](int h) { v.rows[h] = terms[h]->evaluate(d, v.kappa); });
        terms.clear();

        v.P_inside.assign(H, std::vector<char>(S));
        v.R_inside.assign(H, std::vector<char>(S));
        std::map<int, AgreementRow> layers;
        long inside_total = 0;
        double width_total = 0;
        std::vector<Violation> all;
        for (int h = 0; h < H; ++h) {
            const HeadInput& in = heads[h];
            AgreementRow& layer = scope_row(layers, in.layer);
            for (int s = 0; s < S; ++s) {
                const theory::BoundRow& b = v.rows[h][s];
                const struct {
                    const char* metric;
                    double value, lower, upper;
                    char& flag;
                } metrics[2] = {
                    {"P", in.P_mean[s], b.precision_lower, b.precision_upper, v.P_inside[h][s]},
                    {"R", in.R_mean[s], b.recall_lower, b.recall_upper, v.R_inside[h][s]}};
                for (const auto& m : metrics) {
                    const double e = excess(m.value, m.lower, m.upper);
                    m.flag = e == 0;
                    layer.points += 1;
                    layer.inside += e == 0;
                    layer.worst_excess = std::max(layer.worst_excess, e);
                    inside_total += e == 0;
                    width_total += m.upper - m.lower;
                    if (e > 0)
                        all.push_back(
                            {in.layer, in.head, sizes[s], m.metric, m.value, m.lower, m.upper, e});
                }
            }
        }
        v.fraction_inside = inside_total / points;
        v.mean_width = width_total / points;
        v.global.layer = -1;
        for (auto& [index, row] : layers) {
            row.fraction = static_cast<double>(row.inside) / row.points;
            v.global.points += row.points;
            v.global.inside += row.inside;
            v.global.worst_excess = std::max(v.global.worst_excess, row.worst_excess);
            v.by_layer.push_back(row);
        }
        v.global.fraction = static_cast<double>(v.global.inside) / v.global.points;
        // Excess descending; equal excesses in input order (stable), so the list is unique.
        std::stable_sort(all.begin(), all.end(), [](const Violation& a, const Violation& b) {
            return a.excess > b.excess;
        });
        if (all.size() > static_cast<std::size_t>(kViolationsKept)) all.resize(kViolationsKept);
        v.violations = std::move(all);
        result.variants.push_back(std::move(v));
    }
    return result;
}

void write_envelope_files(const EnvelopeResult& r, const std::string& out_dir) {
    const std::filesystem::path dir(out_dir);
    const auto f = [](double x) { return format_double(x); };
    const std::size_t H = r.layer.size(), S = r.sizes.size();

    std::ostringstream bounds;
    bounds << "layer,head,N,variant,kappa,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper,"
              "P_inside,R_inside\n";
    for (const VariantResult& v : r.variants)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t s = 0; s < S; ++s) {
                const theory::BoundRow& b = v.rows[h][s];
                bounds << r.layer[h] << ',' << r.head[h] << ',' << r.sizes[s] << ','
                       << theory::to_string(v.variant) << ',' << f(v.kappa) << ','
                       << f(r.P_mean[h][s]) << ',' << f(r.R_mean[h][s]) << ','
                       << f(b.precision_lower) << ',' << f(b.precision_upper) << ','
                       << f(b.recall_lower) << ',' << f(b.recall_upper) << ','
                       << int(v.P_inside[h][s]) << ',' << int(v.R_inside[h][s]) << '\n';
            }

    std::ostringstream envelope;
    envelope << "variant,N,heads,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper\n";
    for (const VariantResult& v : r.variants)
        for (std::size_t s = 0; s < S; ++s) {
            double sums[6] = {0, 0, 0, 0, 0, 0};
            for (std::size_t h = 0; h < H; ++h) {
                const theory::BoundRow& b = v.rows[h][s];
                const double values[6] = {r.P_mean[h][s],    r.R_mean[h][s], b.precision_lower,
                                          b.precision_upper, b.recall_lower, b.recall_upper};
                for (int i = 0; i < 6; ++i)
                    sums[i] += values[i];
            }
            envelope << theory::to_string(v.variant) << ',' << r.sizes[s] << ',' << H;
            for (double sum : sums)
                envelope << ',' << f(sum / static_cast<double>(H));
            envelope << '\n';
        }

    std::ostringstream agreement;
    agreement << "variant,scope,layer,points,inside,fraction,worst_excess\n";
    for (const VariantResult& v : r.variants) {
        auto row = [&](const char* scope, const AgreementRow& a) {
            agreement << theory::to_string(v.variant) << ',' << scope << ',' << a.layer << ','
                      << a.points << ',' << a.inside << ',' << f(a.fraction) << ','
                      << f(a.worst_excess) << '\n';
        };
        row("global", v.global);
        for (const AgreementRow& a : v.by_layer)
            row("layer", a);
    }

    std::ostringstream violations;
    violations << "variant,layer,head,N,metric,value,lower,upper,excess\n";
    for (const VariantResult& v : r.variants)
        for (const Violation& x : v.violations)
            violations << theory::to_string(v.variant) << ',' << x.layer << ',' << x.head << ','
                       << x.N << ',' << x.metric << ',' << f(x.value) << ',' << f(x.lower) << ','
                       << f(x.upper) << ',' << f(x.excess) << '\n';

    nlohmann::json variants = nlohmann::json::object();
    for (const VariantResult& v : r.variants)
        variants[theory::to_string(v.variant)] = {
            {"kappa", json_number(v.kappa)},
            {"kappa_fitted", v.kappa_fitted},
            {"fraction_inside", json_number(v.fraction_inside)},
            {"mean_width", json_number(v.mean_width)},
            {"kappa_lower95", json_number(v.kappa_lower95)},
            {"lower_fraction_at_kappa_lower95", json_number(v.lower_fraction_at_kappa_lower95)}};
    const nlohmann::json kappa = {{"cosines", to_string(r.cosines)}, {"variants", variants}};

    write_file_atomic((dir / "bounds.csv").string(), bounds.str());
    write_file_atomic((dir / "envelope.csv").string(), envelope.str());
    write_file_atomic((dir / "agreement.csv").string(), agreement.str());
    write_file_atomic((dir / "violations.csv").string(), violations.str());
    write_file_atomic((dir / "kappa.json").string(), kappa.dump(2) + "\n");
}

nlohmann::json envelope_manifest(const EnvelopeResult& r) {
    nlohmann::json kappas = nlohmann::json::object();
    for (const VariantResult& v : r.variants)
        kappas[theory::to_string(v.variant)] = {{"kappa", json_number(v.kappa)},
                                                {"kappa_fitted", v.kappa_fitted},
                                                {"fraction_inside", json_number(v.fraction_inside)},
                                                {"kappa_lower95", json_number(v.kappa_lower95)}};
    return {
        {"cosines", to_string(r.cosines)},
        {"d", json_number(r.d)},
        {"heads", r.layer.size()},
        {"kappa", kappas},
        {"decisions",
         nlohmann::json::array(
             {"Envelope inputs per head: alpha = mean alpha by position renormalised to sum 1, "
              "norms = mean value norm by position, d = head_dim; token 0 is the sink.",
              "Cosines parametric: rho_jk = exp(-beta |j-k|) for j,k >= 1, rho_0j = rho0, unit "
              "diagonal. Plug-in: rho_jk = measured mean cos at lag |j-k|; lags beyond the "
              "largest measured lag K take the value at K; rho_0j = rho0.",
              "A point is one (head, N, metric in {P, R}); inside iff lower - 1e-12 <= measured "
              "mean <= upper + 1e-12 (plain means over documents, no interval).",
              "kappa fit (SPEC 7), per variant over all points: 0.1-decade grid on [1e-4, 1e2] "
              "(61 points), refined to 0.01 decade within +-0.1 and to 0.001 within +-0.01 of the "
              "best; maximises the fraction inside, ties to the narrower envelope (mean of "
              "upper - lower), then to the smaller kappa.",
              "kappa_lower95: largest kappa in [1e-4, 1e2] with >= 95% of P and R lower bounds "
              "holding (bisection in log kappa, 40 steps; lower bounds grow with kappa); NaN "
              "(string) when none.",
              "violations.csv: the 20 largest excesses per variant; equal excesses in head, N, "
              "P-before-R order.",
              "bounds.csv rows: by variant (paper, exact-mean, scale-invariant), then head in "
              "input order, then N; P_inside/R_inside are 0/1."})}};
}

}  // namespace attngeo::compare
