// Envelopes over measured heads, verdict III per model and variant, agreement and excesses; see
// envelopes.hpp. Per-head work runs in parallel and is reduced in head order (integers for the
// counts), so every output is the same for any thread count.
#include "compare/envelopes.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/flag_choice.hpp"
#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/document_bound_sample.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/parallel_for.hpp"
#include "compare/verdict_tables.hpp"
#include "theory/assumption_models.hpp"

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

// Distance outside [lower, upper]; 0 when inside (with the slack).
double excess(double value, double lower, double upper) {
    if (value >= lower - kSlack && value <= upper + kSlack) return 0;
    return value < lower ? lower - value : value - upper;
}

std::string head_name(const HeadInput& h) {
    return "layer " + std::to_string(h.layer) + " head " + std::to_string(h.head);
}

void validate_head(const HeadInput& h, const std::vector<int>& sizes,
                   const EnvelopeSettings& settings, const std::string& who) {
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
        throw InputError(who + ": beta = " + format_double(h.beta) + ", expected finite and >= 0");
    if (settings.cosines == CosineSource::plug_in) {
        if (h.cos_by_lag.empty())
            throw InputError(who + ": no measured cosines by lag for --cosines plug-in");
        for (std::size_t k = 0; k < h.cos_by_lag.size(); ++k)
            if (!(std::abs(h.cos_by_lag[k]) <= 1 + kCosineTolerance))
                throw InputError(who + ": cos at lag " + std::to_string(k + 1) + " = " +
                                 format_double(h.cos_by_lag[k]) + ", expected in [-1, 1]");
    }
}

void validate_model(const ModelInput& m, const EnvelopeSettings& settings) {
    const std::string who = "compare envelopes" + (m.name.empty() ? "" : " (" + m.name + ")");
    if (m.heads.empty()) throw InputError(who + ": no heads to evaluate");
    const std::vector<int>& sizes = m.heads.front().sizes;
    if (sizes.empty()) throw InputError(who + ": empty N grid");
    for (const HeadInput& h : m.heads)
        validate_head(h, sizes, settings, who + ": " + head_name(h));
    const std::size_t H = m.heads.size(), S = sizes.size(), n = m.heads.front().alpha.size();
    if (m.documents < 1) throw InputError(who + ": no documents");
    if (m.alpha.size() != m.documents * H * n)
        throw InputError(who + ": per-document alpha is not [documents, heads, positions]");
    for (const UnitValues* v : {&m.P, &m.R})
        if (v->units != m.documents || v->points != static_cast<int>(H * S) ||
            v->values.size() != m.documents * H * S)
            throw InputError(who + ": per-document P/R is not [documents, heads, sizes]");
}

void validate_inputs(const std::vector<ModelInput>& models, const EnvelopeSettings& settings) {
    const char* fn = "attngeo::compare::evaluate_envelopes";
    if (models.empty()) throw InputError("compare envelopes: no models to evaluate");
    if (!(settings.d >= 1)) throw_domain_error(fn, "d = " + format_double(settings.d) + " < 1");
    if (settings.kappa && !(*settings.kappa > 0 && std::isfinite(*settings.kappa)))
        throw_domain_error(
            fn, "kappa = " + format_double(*settings.kappa) + ", expected finite and > 0");
    for (const ModelInput& m : models)
        validate_model(m, settings);
}

// The Table-2 regime (1..5) of each N of the grid, from the head's fitted profile; 0 without.
std::vector<int> head_regimes(const HeadInput& h) {
    std::vector<int> out(h.sizes.size(), 0);
    if (!std::isfinite(h.profile_p_base) || !std::isfinite(h.profile_eta)) return out;
    const Eigen::VectorXd alpha = Eigen::Map<const Eigen::VectorXd>(
        h.alpha.data(), static_cast<Eigen::Index>(h.alpha.size()));
    const auto regimes =
        theory::regimes_by_size(alpha, h.profile_p_base, h.profile_eta, h.profile_iv_tolerance);
    for (std::size_t s = 0; s < h.sizes.size(); ++s)
        out[s] = static_cast<int>(regimes[h.sizes[s] - 1]) + 1;
    return out;
}

// The terms of every head's document-mean profile for one variant.
std::vector<std::unique_ptr<theory::BoundTerms>> mean_terms(
    const std::vector<theory::HeadModel>& models, const std::vector<int>& sizes,
    theory::BoundVariant variant, int threads) {
    std::vector<std::unique_ptr<theory::BoundTerms>> terms(models.size());
    parallel_for(static_cast<int>(models.size()), threads, [&](int h) {
        terms[h] = std::make_unique<theory::BoundTerms>(models[h], sizes, variant);
    });
    return terms;
}

// The scan's points of one model: every (head, N) in head order, then N, with the facts of the
// document-mean α ranking and the margin flags of its bound rows.
ScanPoints model_points(const ModelInput& m, const std::vector<theory::HeadModel>& models,
                        const std::vector<std::vector<int>>& regimes,
                        const std::vector<std::unique_ptr<theory::BoundTerms>>& terms, double d) {
    ScanPoints p;
    for (std::size_t h = 0; h < m.heads.size(); ++h) {
        const HeadInput& head = m.heads[h];
        const auto facts = point_facts(models[h], head.sizes, theory::Ranking::attention);
        p.facts.insert(p.facts.end(), facts.begin(), facts.end());
        p.regime.insert(p.regime.end(), regimes[h].begin(), regimes[h].end());
        for (const theory::BoundRow& r : terms[h]->evaluate(d, 1.0)) {
            p.margins.push_back(theory::margin_flags(r));
            p.layer.push_back(head.layer);
            p.head.push_back(head.head);
        }
    }
    return p;
}

// The bound rows of one head: Δ, Δ0, B and flags of the document-mean profile; the four bounds
// (and F through Corollary 1) the mean over documents at the rows κ, or each side at its own.
void fill_rows(const KappaScan& scan, const std::vector<double>& rows_kappa_bounds_mean,
               std::size_t offset, std::vector<theory::BoundRow>& rows, int side) {
    for (std::size_t s = 0; s < rows.size(); ++s) {
        const double b = std::isnan(scan.rows_kappa) ? scan.points.bound[side][offset + s]
                                                     : rows_kappa_bounds_mean[offset + s];
        theory::BoundRow& r = rows[s];
        (side == 0   ? r.precision_lower
         : side == 1 ? r.precision_upper
         : side == 2 ? r.recall_lower
                     : r.recall_upper) = b;
    }
}

std::vector<std::vector<theory::BoundRow>> bound_rows(
    const DocumentSampleInputs& in, const KappaScan& scan,
    const std::vector<std::unique_ptr<theory::BoundTerms>>& terms, DocumentTerms& document_terms) {
    const double kappa = std::isnan(scan.rows_kappa) ? 1.0 : scan.rows_kappa;
    std::array<std::vector<double>, kSideCount> mean;
    if (!std::isnan(scan.rows_kappa)) {
        const auto per_document = document_bounds(in, kappa, &document_terms);
        for (int side = 0; side < kSideCount; ++side) {
            mean[side].assign(in.P.points, 0.0);
            for (const auto& doc : per_document)
                for (int p = 0; p < in.P.points; ++p)
                    mean[side][p] += doc[side][p] / in.documents;
        }
    }
    std::vector<std::vector<theory::BoundRow>> rows(terms.size());
    for (std::size_t h = 0; h < terms.size(); ++h) {
        rows[h] = terms[h]->evaluate(in.d, kappa);
        const std::size_t offset = h * in.sizes.size();
        for (int side = 0; side < kSideCount; ++side)
            fill_rows(scan, mean[side], offset, rows[h], side);
        for (theory::BoundRow& r : rows[h]) {
            r.fmax_lower = theory::f_of(r.precision_lower);
            r.fmax_upper = theory::f_of(r.precision_upper);
            r.fmin_lower = theory::f_of(r.recall_lower);
            r.fmin_upper = theory::f_of(r.recall_upper);
        }
    }
    return rows;
}

AgreementRow& scope_row(std::map<int, AgreementRow>& rows, int layer) {
    AgreementRow& row = rows[layer];
    row.layer = layer;
    return row;
}

// Agreement at the rows: inside flags per (head, N), per layer and global, the mean width, and
// the kViolationsKept largest excesses.
void tally_agreement(const ModelInput& model, VariantResult& v) {
    const std::vector<int>& sizes = model.heads.front().sizes;
    const int H = static_cast<int>(model.heads.size()), S = static_cast<int>(sizes.size());
    v.P_inside.assign(H, std::vector<char>(S));
    v.R_inside.assign(H, std::vector<char>(S));
    std::map<int, AgreementRow> layers;
    long inside_total = 0, points = 0;
    double width_total = 0;
    std::vector<Violation> all;
    for (int h = 0; h < H; ++h) {
        const HeadInput& in = model.heads[h];
        AgreementRow& layer = scope_row(layers, in.layer);
        for (int s = 0; s < S; ++s) {
            const theory::BoundRow& b = v.rows[h][s];
            if (v.scan.points.convention[h * S + s]) {  // bounds 1 by definition: inside
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
                points += 1;
                width_total += m.upper - m.lower;
                if (e > 0)
                    all.push_back(
                        {in.layer, in.head, sizes[s], m.metric, m.value, m.lower, m.upper, e});
            }
        }
    }
    v.fraction_inside = points > 0 ? static_cast<double>(inside_total) / points : kNaN;
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

using MeanTerms = std::vector<std::unique_ptr<theory::BoundTerms>>;  // [H] of the mean profile

// The bound terms one variant leaves to the next when both use the same μ (only B changes).
struct SharedTerms {
    std::shared_ptr<DocumentTerms> documents;  // every document's, per head
    std::shared_ptr<MeanTerms> means;          // the document-mean profile's, per head
};

// What one model keeps through the scan of one variant.
struct PreparedModel {
    std::vector<std::vector<int>> regimes;  // [H][S]
    // With inputs->heads [H] the head models (document-mean α, norms, cosines): one copy of
    // their n × n cosines, not a second one beside the scan's.
    std::shared_ptr<DocumentSampleInputs> inputs;
    SharedTerms terms;  // the scan's document and mean-profile terms, again for the bound rows
};

// The mean profile's terms: the previous variant's switched to this one (`reuse`), or built.
std::shared_ptr<MeanTerms> prepared_mean_terms(const std::vector<theory::HeadModel>& models,
                                               const std::vector<int>& sizes,
                                               theory::BoundVariant variant, int threads,
                                               std::shared_ptr<MeanTerms> reuse) {
    if (!reuse) return std::make_shared<MeanTerms>(mean_terms(models, sizes, variant, threads));
    for (const auto& head : *reuse)
        head->switch_variant(variant);
    return reuse;
}

// `reuse`: the terms of the variant scanned before, when it shares this one's μ.
PreparedModel prepare(const ModelInput& m, const EnvelopeSettings& settings,
                      theory::BoundVariant variant, int threads, SharedTerms reuse) {
    PreparedModel p;
    for (const HeadInput& h : m.heads)
        p.regimes.push_back(head_regimes(h));
    p.inputs = std::make_shared<DocumentSampleInputs>();
    DocumentSampleInputs& in = *p.inputs;
    in.heads.resize(m.heads.size());
    parallel_for(static_cast<int>(m.heads.size()), threads,
                 [&](int h) { in.heads[h] = head_model(m.heads[h], settings.cosines); });
    in.sizes = m.heads.front().sizes;
    in.documents = m.documents;
    in.tokens = static_cast<int>(m.heads.front().alpha.size());
    in.alpha = m.alpha;
    in.P = m.P;
    in.R = m.R;
    in.d = settings.d;
    in.variant = variant;
    in.band.replicates = settings.replicates;
    in.band.seed = settings.seed;
    in.band.threads = threads;
    p.terms.means =
        prepared_mean_terms(in.heads, in.sizes, variant, threads, std::move(reuse.means));
    if (reuse.documents) switch_variant(*reuse.documents, variant);
    p.terms.documents = reuse.documents ? std::move(reuse.documents) : document_terms_cache(in);
    return p;
}

// One variant over every model together. `shared` [models]: the terms of the variant evaluated
// before when it shares this one's μ (reused), else empty; left holding this one's.
void evaluate_variant(const std::vector<ModelInput>& models, const EnvelopeSettings& settings,
                      theory::BoundVariant variant, int threads, EnvelopeResults& out,
                      std::size_t index, std::vector<SharedTerms>& shared) {
    std::vector<PreparedModel> prepared;
    std::vector<Sample> samples;
    shared.resize(models.size());
    for (std::size_t k = 0; k < models.size(); ++k) {
        const ModelInput& m = models[k];
        prepared.push_back(prepare(m, settings, variant, threads, std::move(shared[k])));
        shared[k] = prepared.back().terms;
        const PreparedModel& p = prepared.back();
        samples.push_back(document_bound_sample(
            model_points(m, p.inputs->heads, p.regimes, *p.terms.means, settings.d), p.inputs,
            p.terms.documents));
    }
    ScanResult result = scan_kappa(samples, settings.kappa);
    if (models.size() > 1) out.universal[index] = result.joint;
    for (std::size_t k = 0; k < models.size(); ++k) {
        VariantResult& v = out.models[k].variants[index];
        v.variant = variant;
        v.scan = std::move(result.samples[k]);
        v.rows_rule = rows_rule(v.scan, settings.kappa.has_value(), false);
        const PreparedModel& p = prepared[k];
        v.rows = bound_rows(*p.inputs, v.scan, *p.terms.means, *p.terms.documents);
        tally_agreement(models[k], v);
    }
}

}  // namespace

CosineSource parse_cosine_source(const std::string& text) {
    static const FlagChoice<CosineSource> kSources[] = {{"parametric", CosineSource::parametric},
                                                        {"plug-in", CosineSource::plug_in}};
    return parse_choice(text, "--cosines", kSources);
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

EnvelopeResults evaluate_envelopes(const std::vector<ModelInput>& models,
                                   const EnvelopeSettings& settings) {
    validate_inputs(models, settings);
    const int threads = std::max(1, settings.threads);
    const auto& variants = theory::bound_variants();
    EnvelopeResults out;
    for (const ModelInput& m : models) {
        EnvelopeResult r;
        r.name = m.name;
        r.cosines = settings.cosines;
        r.d = settings.d;
        r.band_replicates = settings.replicates;
        r.sizes = m.heads.front().sizes;
        for (const HeadInput& h : m.heads) {
            r.layer.push_back(h.layer);
            r.head.push_back(h.head);
            r.P_mean.push_back(h.P_mean);
            r.R_mean.push_back(h.R_mean);
            r.regime.push_back(head_regimes(h));
        }
        r.variants.resize(variants.size());
        out.models.push_back(std::move(r));
    }
    if (models.size() > 1) out.universal.resize(variants.size());
    // Variants that share μ are evaluated one after the other, so the second reuses the first's
    // per-document and mean-profile terms (only B changes): half the O(n² log n) term builds,
    // the same bits.
    std::vector<std::size_t> order(variants.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return theory::shares_mean(variants[a], variants[0]) &&
               !theory::shares_mean(variants[b], variants[0]);
    });
    std::vector<SharedTerms> shared;
    for (std::size_t done = 0; done < order.size(); ++done) {
        const std::size_t v = order[done];
        if (done > 0 && !theory::shares_mean(variants[v], variants[order[done - 1]]))
            shared.clear();  // another μ: build afresh, and free the last pair's terms first
        evaluate_variant(models, settings, variants[v], threads, out, v, shared);
        if (settings.on_variant)
            settings.on_variant(static_cast<std::int64_t>(done + 1),
                                static_cast<std::int64_t>(variants.size()));
    }
    return out;
}

namespace {

const char* regime_name(int regime) {
    static const char* const names[6] = {"NA", "I", "II", "III", "IV", "V"};
    return names[regime];
}

// kappa.json's and the manifest's block per variant: the verdict and agreement at the rows.
nlohmann::json variant_blocks(const EnvelopeResult& r) {
    nlohmann::json blocks = nlohmann::json::object();
    for (const VariantResult& v : r.variants) {
        nlohmann::json block = verdict_json(v.scan, v.rows_rule, r.band_replicates);
        block.update({{"fraction_inside", json_number(v.fraction_inside)},
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
    envelope << schema::csv_header(schema::page::compare, schema::file::envelope) << '\n';
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

std::string bounds_csv(const EnvelopeResult& r) {
    const std::size_t H = r.layer.size(), S = r.sizes.size();
    std::ostringstream bounds;
    bounds << schema::csv_header(schema::page::compare, schema::file::bounds) << '\n';
    for (const VariantResult& v : r.variants)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t s = 0; s < S; ++s) {
                const theory::BoundRow& b = v.rows[h][s];
                bounds << r.layer[h] << ',' << r.head[h] << ',' << r.sizes[s] << ','
                       << theory::to_string(v.variant) << ',' << csv_field(v.scan.rows_kappa) << ','
                       << csv_field(r.P_mean[h][s]) << ',' << csv_field(r.R_mean[h][s]) << ','
                       << csv_field(b.precision_lower) << ',' << csv_field(b.precision_upper) << ','
                       << csv_field(b.recall_lower) << ',' << csv_field(b.recall_upper) << ','
                       << int(v.P_inside[h][s]) << ',' << int(v.R_inside[h][s]) << ','
                       << regime_name(r.regime[h][s]) << ',' << csv_field(b.delta) << ','
                       << csv_field(b.delta0) << ',' << csv_field(b.scale) << ','
                       << judgement_fields(v.scan, h * S + s, b) << '\n';
            }
    return bounds.str();
}

std::string agreement_csv(const EnvelopeResult& r) {
    std::ostringstream agreement;
    agreement << schema::csv_header(schema::page::compare, schema::file::agreement) << '\n';
    for (const VariantResult& v : r.variants) {
        auto row = [&](const char* scope, const AgreementRow& a) {
            agreement << theory::to_string(v.variant) << ',' << scope << ',' << a.layer << ','
                      << a.points << ',' << a.inside << ',' << csv_field(a.fraction) << ','
                      << csv_field(a.worst_excess) << '\n';
        };
        row("global", v.global);
        for (const AgreementRow& a : v.by_layer)
            row("layer", a);
    }
    return agreement.str();
}

std::string violations_csv(const EnvelopeResult& r) {
    std::ostringstream violations;
    violations << schema::csv_header(schema::page::compare, schema::file::violations) << '\n';
    for (const VariantResult& v : r.variants)
        for (const Violation& x : v.violations)
            violations << theory::to_string(v.variant) << ',' << x.layer << ',' << x.head << ','
                       << x.N << ',' << x.metric << ',' << csv_field(x.value) << ','
                       << csv_field(x.lower) << ',' << csv_field(x.upper) << ','
                       << csv_field(x.excess) << '\n';
    return violations.str();
}

}  // namespace

void write_verdict_files(const EnvelopeResult& r, const std::string& out_dir,
                         const std::string& suffix) {
    const std::filesystem::path dir(out_dir);
    std::ostringstream scan, verdict;
    scan << kKappaScanColumns << '\n';
    verdict << kVerdictColumns << '\n';
    for (const VariantResult& v : r.variants) {
        append_scan_rows(scan, "", v.variant, v.scan);
        append_verdict_rows(verdict, "", v.variant, v.scan);
    }
    auto named = [&](const std::string& file) {
        const std::string stem = file.substr(0, file.rfind('.'));
        return (dir / (stem + suffix + ".csv")).string();
    };
    write_file_atomic(named(schema::file::kappa_scan), scan.str());
    write_file_atomic(named(schema::file::verdict), verdict.str());
}

void write_envelope_files(const EnvelopeResult& r, const std::string& out_dir) {
    const std::filesystem::path dir(out_dir);
    write_verdict_files(r, out_dir, "");
    const nlohmann::json kappa = {{"cosines", to_string(r.cosines)},
                                  {"variants", variant_blocks(r)}};
    write_file_atomic((dir / schema::file::bounds).string(), bounds_csv(r));
    write_file_atomic((dir / schema::file::envelope).string(), envelope_means_csv(r));
    write_file_atomic((dir / schema::file::agreement).string(), agreement_csv(r));
    write_file_atomic((dir / schema::file::violations).string(), violations_csv(r));
    write_file_atomic((dir / schema::file::kappa).string(), kappa.dump(2) + "\n");
}

nlohmann::json envelope_manifest(const EnvelopeResult& r) {
    return {
        {"cosines", to_string(r.cosines)},
        {"d", json_number(r.d)},
        {"heads", r.layer.size()},
        {"kappa", variant_blocks(r)},
        {"decisions",
         nlohmann::json::array(
             {"Envelope inputs per head: norms = mean value norm by position, d = head_dim; "
              "token 0 is the sink. Each document's bound from its own final-row alpha "
              "(renormalised to sum 1) with the head's norms and cosines held fixed; the "
              "bound rows are the mean over documents of those bounds; Delta, Delta0, B, the "
              "margin flags, the convention points and the Table-2 regimes are those of the "
              "document-mean alpha.",
              "Cosines parametric: rho_jk = exp(-beta |j-k|) for j,k >= 1, rho_0j = rho0, unit "
              "diagonal. Plug-in: rho_jk = measured mean cos at lag |j-k|; lags beyond the "
              "largest measured lag K take the value at K; rho_0j = rho0.",
              "A point is one (head, N, metric in {P, R}); inside (P_inside, R_inside, "
              "fraction_inside, agreement.csv, violations.csv) iff lower - 1e-12 <= measured "
              "mean <= upper + 1e-12 at the bound rows: descriptive, not the verdict.",
              "Table-2 regimes per (head, N) from the head's fitted Assumption-3 profile "
              "(p_base, eta of profile.csv).",
              kVerdictDecision,
              "violations.csv: the 20 largest excesses per variant; equal excesses in head, N, "
              "P-before-R order.",
              "bounds.csv rows: by variant (paper, exact-mean, scale-invariant, corrected), then "
              "head in input order, then N; P_inside/R_inside are 0/1."})}};
}

std::string universal_kappa_csv(const EnvelopeResults& results) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::compare, schema::file::universal_kappa) << '\n';
    const auto& variants = theory::bound_variants();
    for (std::size_t v = 0; v < results.universal.size(); ++v)
        for (int side = 0; side < kSideCount; ++side) {
            const JointSide& j = results.universal[v].sides[side];
            out << theory::to_string(variants[v]) << ',' << to_string(side_metric(side)) << ','
                << to_string(side_kind(side)) << ',' << kappa_set_text(j.kappa_set) << ','
                << csv_field(j.kappa_edge) << ',' << csv_field(j.gap_at_edge) << ','
                << results.models.size() << ',' << j.consistent_samples.size() << ','
                << (j.kappa_set.empty() ? "no-universal-kappa" : "universal-kappa") << '\n';
        }
    return out.str();
}

nlohmann::json universal_kappa_json(const EnvelopeResults& results) {
    nlohmann::json out = nlohmann::json::object();
    const auto& variants = theory::bound_variants();
    for (std::size_t v = 0; v < results.universal.size(); ++v)
        out[theory::to_string(variants[v])] = joint_json(results.universal[v]);
    return out;
}

}  // namespace attngeo::compare
