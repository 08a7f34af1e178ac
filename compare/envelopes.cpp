// Envelopes over measured heads, κ per variant over all heads, agreement and violations; see
// envelopes.hpp. Per-head work runs in parallel and is reduced in head order (integers for the
// counts), so every output is the same for any thread count.
#include "compare/envelopes.hpp"

#include <omp.h>

#include <boost/math/distributions/students_t.hpp>

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
#include "common/run_schema.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/parallel_for.hpp"
#include "compare/verdict_output.hpp"
#include "theory/models.hpp"

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

// The 95 % interval of a measured mean over documents: mean ± t(0.975, docs − 1)·se; the mean
// alone without a defined standard error (one document).
ScanPoint measured_point(double mean, const std::vector<double>& se, std::size_t s,
                         std::int64_t documents) {
    const double error = s < se.size() ? se[s] : kNaN;
    if (documents < 2 || !std::isfinite(error)) return {mean, mean, mean};
    const boost::math::students_t_distribution<double> t(static_cast<double>(documents - 1));
    const double half = boost::math::quantile(t, 0.975) * error;
    return {mean, mean - half, mean + half};
}

// The Table-2 regime (1..5) of each N of the grid, from the head's fitted profile; 0 without.
std::vector<int> head_regimes(const HeadInput& h) {
    std::vector<int> out(h.sizes.size(), 0);
    if (!std::isfinite(h.profile_p_base) || !std::isfinite(h.profile_eta)) return out;
    const Eigen::VectorXd alpha = Eigen::Map<const Eigen::VectorXd>(
        h.alpha.data(), static_cast<Eigen::Index>(h.alpha.size()));
    const auto regimes = theory::regimes_by_size(alpha, h.profile_p_base, h.profile_eta);
    for (std::size_t s = 0; s < h.sizes.size(); ++s)
        out[s] = static_cast<int>(regimes[h.sizes[s] - 1]) + 1;
    return out;
}

// The scan's points: every (head, N) in head order, then N. The convention points are those of
// the α ranking the envelopes use (BoundTerms' default).
ScanInputs scan_inputs(const std::vector<HeadInput>& heads,
                       const std::vector<std::vector<int>>& regimes) {
    ScanInputs in;
    for (std::size_t h = 0; h < heads.size(); ++h) {
        const HeadInput& head = heads[h];
        theory::HeadModel alpha_only;
        alpha_only.alpha = Eigen::Map<const Eigen::VectorXd>(
            head.alpha.data(), static_cast<Eigen::Index>(head.alpha.size()));
        alpha_only.norms = Eigen::VectorXd::Ones(alpha_only.alpha.size());
        const auto facts = point_facts(alpha_only, head.sizes, theory::Ranking::attention);
        in.facts.insert(in.facts.end(), facts.begin(), facts.end());
        for (std::size_t s = 0; s < head.sizes.size(); ++s) {
            in.P.push_back(measured_point(head.P_mean[s], head.P_se, s, head.documents));
            in.R.push_back(measured_point(head.R_mean[s], head.R_se, s, head.documents));
            in.regime.push_back(regimes[h][s]);
        }
    }
    return in;
}

// Every head's bounds at each κ, flattened in the scan's point order: [kappas.size()] (R's
// NaN without with_recall).
std::vector<ScanBounds> flattened_bounds(
    const std::vector<std::unique_ptr<theory::BoundTerms>>& terms, double d,
    const std::vector<double>& kappas, bool with_recall, int threads) {
    const int H = static_cast<int>(terms.size());
    const std::size_t S = terms.front()->sizes().size();
    std::vector<ScanBounds> out(kappas.size());
    for (ScanBounds& b : out)
        for (MetricBounds* m : {&b.P, &b.R}) {
            m->lower.resize(H * S);
            m->upper.resize(H * S);
        }
    parallel_for(H, threads, [&](int h) {
        const auto bounds = terms[h]->envelopes_many(d, kappas, with_recall);  // [κ][S]
        for (std::size_t k = 0; k < kappas.size(); ++k)
            for (std::size_t s = 0; s < S; ++s) {
                const theory::EnvelopeBounds& e = bounds[k][s];
                const std::size_t point = h * S + s;
                out[k].P.lower[point] = e.precision_lower;
                out[k].P.upper[point] = e.precision_upper;
                out[k].R.lower[point] = e.recall_lower;
                out[k].R.upper[point] = e.recall_upper;
            }
    });
    return out;
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

namespace {

// Agreement at the variant's κ: inside flags per (head, N), per layer and global, the mean
// width, and the kViolationsKept largest violations.
void tally_agreement(const std::vector<HeadInput>& heads, VariantResult& v) {
    const std::vector<int>& sizes = heads.front().sizes;
    const int H = static_cast<int>(heads.size()), S = static_cast<int>(sizes.size());
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
            // A convention point's bounds are 1 by definition: flagged inside, counted nowhere.
            if (b.trivial) {
                v.P_inside[h][s] = v.R_inside[h][s] = 1;
                continue;
            }
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
    const double points = 2.0 * static_cast<double>(v.scan.sides[0].points);
    v.fraction_inside = points > 0 ? inside_total / points : kNaN;
    v.mean_width = points > 0 ? width_total / points : kNaN;
    v.global.layer = -1;
    for (auto& [index, row] : layers) {
        row.fraction = row.points > 0 ? static_cast<double>(row.inside) / row.points : kNaN;
        v.global.points += row.points;
        v.global.inside += row.inside;
        v.global.worst_excess = std::max(v.global.worst_excess, row.worst_excess);
        v.by_layer.push_back(row);
    }
    v.global.fraction =
        v.global.points > 0 ? static_cast<double>(v.global.inside) / v.global.points : kNaN;
    // Excess descending; equal excesses in input order (stable), so the list is unique.
    std::stable_sort(all.begin(), all.end(),
                     [](const Violation& a, const Violation& b) { return a.excess > b.excess; });
    if (all.size() > static_cast<std::size_t>(kViolationsKept)) all.resize(kViolationsKept);
    v.violations = std::move(all);
}

// Counts bound evaluations for EnvelopeSettings::on_evaluation; each variant ends at its
// budget, so the count never goes back and never passes the total.
class EvaluationCounter {
  public:
    explicit EvaluationCounter(const EnvelopeSettings& settings)
        : report_(settings.on_evaluation),
          total_(kEvaluationsPerVariant *
                 static_cast<std::int64_t>(theory::bound_variants().size())) {}
    void tick() {
        done_ = std::min(done_ + 1, variant_end_ - 1);
        if (report_) report_(done_, total_);
    }
    void start_variant() { variant_end_ += kEvaluationsPerVariant; }
    void end_variant() {
        done_ = variant_end_;
        if (report_) report_(done_, total_);
    }

  private:
    const std::function<void(std::int64_t, std::int64_t)>& report_;
    std::int64_t total_ = 0, done_ = 0, variant_end_ = 0;
};

// κ-independent terms of every head for one variant.
std::vector<std::unique_ptr<theory::BoundTerms>> build_terms(const std::vector<HeadInput>& heads,
                                                             const EnvelopeSettings& settings,
                                                             theory::BoundVariant variant,
                                                             int threads) {
    const int H = static_cast<int>(heads.size());
    std::vector<std::unique_ptr<theory::BoundTerms>> terms(H);
    parallel_for(H, threads, [&](int h) {
        terms[h] = std::make_unique<theory::BoundTerms>(head_model(heads[h], settings.cosines),
                                                        heads[h].sizes, variant);
    });
    return terms;
}

// One variant over every head (the terms' variant): the κ scan (or the given κ), the rows at
// κ, the agreement.
VariantResult evaluate_variant(const std::vector<HeadInput>& heads,
                               const EnvelopeSettings& settings,
                               const std::vector<std::unique_ptr<theory::BoundTerms>>& terms,
                               const ScanInputs& inputs, int threads, EvaluationCounter& counter) {
    counter.start_variant();
    const int H = static_cast<int>(heads.size());
    const double d = settings.d;
    VariantResult v;
    v.variant = terms.front()->variant();
    // At d = ∞, κ·d = ∞ for every κ: the rows keep κ = 1 unless one was given.
    const std::optional<double> fixed =
        std::isinf(d) ? std::optional<double>(settings.kappa.value_or(1)) : settings.kappa;
    v.scan = scan_kappa(
        inputs, ScanBatchEvaluator([&](const std::vector<double>& kappas, bool with_recall) {
            std::vector<ScanBounds> bounds =
                flattened_bounds(terms, d, kappas, with_recall, threads);
            for (std::size_t k = 0; k < kappas.size(); ++k)
                counter.tick();
            return bounds;
        }),
        fixed, RefineWindows::precision_alone);
    v.kappa = fixed ? *fixed : v.scan.interval_score.kappa;
    v.kappa_fitted = !fixed;

    v.rows.assign(H, {});
    parallel_for(H, threads, [&](int h) { v.rows[h] = terms[h]->evaluate(d, v.kappa); });
    std::vector<theory::MarginFlags> margins;
    for (const auto& head_rows : v.rows) {
        const auto part = margins_of(head_rows);
        margins.insert(margins.end(), part.begin(), part.end());
    }
    judge_points(v.scan, inputs, margins);
    tally_agreement(heads, v);
    counter.end_variant();
    return v;
}

// Every variant in bound_variants() order. Variants with the same μ share their terms (only B
// differs), so the costly sorted terms are built twice, not four times; one family's terms at
// a time bounds the memory.
std::vector<VariantResult> evaluate_variants(const std::vector<HeadInput>& heads,
                                             const EnvelopeSettings& settings,
                                             const ScanInputs& inputs, int threads,
                                             EvaluationCounter& counter) {
    const auto& variants = theory::bound_variants();
    std::vector<VariantResult> results(variants.size());
    std::vector<bool> done(variants.size(), false);
    for (std::size_t first = 0; first < variants.size(); ++first) {
        if (done[first]) continue;
        auto terms = build_terms(heads, settings, variants[first], threads);
        for (std::size_t v = first; v < variants.size(); ++v) {
            if (!theory::shares_mean(variants[v], variants[first])) continue;
            for (auto& t : terms)
                t->switch_variant(variants[v]);
            results[v] = evaluate_variant(heads, settings, terms, inputs, threads, counter);
            done[v] = true;
        }
    }
    return results;
}

}  // namespace

EnvelopeResult evaluate_envelopes(const std::vector<HeadInput>& heads,
                                  const EnvelopeSettings& settings) {
    validate_inputs(heads, settings);
    const int threads = settings.threads > 0 ? settings.threads : omp_get_max_threads();
    EnvelopeResult result;
    result.cosines = settings.cosines;
    result.d = settings.d;
    result.sizes = heads.front().sizes;
    for (const HeadInput& h : heads) {
        result.layer.push_back(h.layer);
        result.head.push_back(h.head);
        result.P_mean.push_back(h.P_mean);
        result.R_mean.push_back(h.R_mean);
    }
    for (const HeadInput& h : heads)
        result.regime.push_back(head_regimes(h));
    const ScanInputs inputs = scan_inputs(heads, result.regime);
    EvaluationCounter counter(settings);
    result.variants = evaluate_variants(heads, settings, inputs, threads, counter);
    return result;
}

namespace {

const char* regime_name(int regime) {
    static const char* const names[6] = {"NA", "I", "II", "III", "IV", "V"};
    return names[regime];
}

// kappa.json's and the manifest's block per variant: κ, agreement at κ and the verdict.
nlohmann::json variant_blocks(const EnvelopeResult& r) {
    nlohmann::json blocks = nlohmann::json::object();
    for (const VariantResult& v : r.variants) {
        std::vector<theory::MarginFlags> margins;
        for (const auto& head : v.rows)
            for (const theory::BoundRow& row : head)
                margins.push_back(theory::margin_flags(row));
        nlohmann::json block =
            verdict_json(v.scan, margins, v.kappa_fitted ? "interval-score" : "given");
        block.update({{"kappa", json_number(v.kappa)},
                      {"kappa_fitted", v.kappa_fitted},
                      {"fraction_inside", json_number(v.fraction_inside)},
                      {"mean_width", json_number(v.mean_width)}});
        blocks[theory::to_string(v.variant)] = block;
    }
    return blocks;
}

// An undefined value (Δ at N = 1 with the sink on top) is an empty field, never "nan".
std::string csv_field(double x) {
    return std::isnan(x) ? std::string() : format_double(x);
}

// envelope.csv: per variant and N, the means over heads of the estimates and the bounds.
std::string envelope_means_csv(const EnvelopeResult& r) {
    const std::size_t H = r.layer.size(), S = r.sizes.size();
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
                envelope << ',' << csv_field(sum / static_cast<double>(H));
            envelope << '\n';
        }
    return envelope.str();
}

}  // namespace

void write_envelope_files(const EnvelopeResult& r, const std::string& out_dir) {
    const std::filesystem::path dir(out_dir);
    const auto f = csv_field;
    const std::size_t H = r.layer.size(), S = r.sizes.size();

    std::ostringstream bounds;
    bounds << "layer,head,N,variant,kappa,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper,"
              "P_inside,R_inside,regime,Delta,Delta0,B,"
           << kStarFlagColumns << '\n';
    std::ostringstream scan, verdict;
    scan << kScanColumns << '\n';
    verdict << kVerdictColumns << '\n';
    for (const VariantResult& v : r.variants) {
        append_scan_rows(scan, "", v.variant, v.scan);
        append_verdict_rows(verdict, "", v.variant, v.scan);
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t s = 0; s < S; ++s) {
                const theory::BoundRow& b = v.rows[h][s];
                bounds << r.layer[h] << ',' << r.head[h] << ',' << r.sizes[s] << ','
                       << theory::to_string(v.variant) << ',' << f(v.kappa) << ','
                       << f(r.P_mean[h][s]) << ',' << f(r.R_mean[h][s]) << ','
                       << f(b.precision_lower) << ',' << f(b.precision_upper) << ','
                       << f(b.recall_lower) << ',' << f(b.recall_upper) << ','
                       << int(v.P_inside[h][s]) << ',' << int(v.R_inside[h][s]) << ','
                       << regime_name(r.regime[h][s]) << ',' << f(b.delta) << ',' << f(b.delta0)
                       << ',' << f(b.scale) << ',' << star_flag_fields(v.scan, h * S + s, b)
                       << '\n';
            }
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

    const nlohmann::json kappa = {{"cosines", to_string(r.cosines)},
                                  {"variants", variant_blocks(r)}};

    write_file_atomic((dir / schema::file::bounds).string(), bounds.str());
    write_file_atomic((dir / schema::file::envelope).string(), envelope_means_csv(r));
    write_file_atomic((dir / schema::file::agreement).string(), agreement.str());
    write_file_atomic((dir / schema::file::violations).string(), violations.str());
    write_file_atomic((dir / schema::file::kappa_scan).string(), scan.str());
    write_file_atomic((dir / schema::file::verdict).string(), verdict.str());
    write_file_atomic((dir / schema::file::kappa).string(), kappa.dump(2) + "\n");
}

nlohmann::json envelope_manifest(const EnvelopeResult& r) {
    const nlohmann::json kappas = variant_blocks(r);
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
              "A point is one (head, N, metric in {P, R}); inside (P_inside, R_inside, "
              "fraction_inside, agreement.csv) iff lower - 1e-12 <= measured mean <= upper + "
              "1e-12 (plain means over documents). The kappa scan's coverage instead uses the "
              "mean's 95% interval over documents, mean +- t(0.975, docs - 1) * se (the mean "
              "alone with one document).",
              "Table-2 regimes per (head, N) from the head's fitted Assumption-3 profile "
              "(p_base, eta of profile.csv).",
              kScanDecision, kIntervalScoreDecision,
              "violations.csv: the 20 largest excesses per variant; equal excesses in head, N, "
              "P-before-R order.",
              "bounds.csv rows: by variant (paper, exact-mean, scale-invariant, corrected), then "
              "head in "
              "input order, then N; P_inside/R_inside are 0/1."})}};
}

}  // namespace attngeo::compare
