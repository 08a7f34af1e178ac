// Planted heads through the real extract statistics and folder writer; see planted.hpp. The
// documents of a head come from Philox streams keyed by (seed, head, document), so the folder
// does not depend on the thread count.
#include "simulate/planted.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/number_list.hpp"
#include "common/output_folder.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/size_checks.hpp"
#include "empirical/extract/extract_folder.hpp"
#include "empirical/extract/extract_state.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::simulate {

// The statistics and the extract folder's writer are empirical/'s torch-free core.
using namespace attngeo::empirical;
namespace {

// Grid points of the RandomStream key no simulate run uses (they count from 0): one for the
// per-head draws, one for the documents.
constexpr std::uint32_t kPlantedDrawPoint = 0x706c0001u;
constexpr std::uint32_t kPlantedDocumentPoint = 0x706c0002u;

// Where theory/parameter_table's parameters live in a planted head.
theory::ParameterFields planted_fields(PlantedParameters& p) {
    theory::ParameterFields f;
    f.profile = &p.profile;
    f.C = &p.C;
    f.lambda = &p.lambda;
    f.beta = &p.beta;
    f.rho0 = &p.rho0;
    f.norm_cv = &p.norm_cv;
    return f;
}

// A head's own parameters, which --draw may vary: the norms', cosines', profile's and the norm
// noise (L is the run's).
bool drawable(const theory::ParameterDescriptor& p) {
    using G = theory::ParameterGroup;
    return p.group == G::norms || p.group == G::cosines || p.group == G::assumption3 ||
           p.group == G::generator;
}

void set_parameter(PlantedParameters& p, const std::string& name, double value) {
    const theory::ParameterDescriptor& parameter = theory::parameter(name);
    theory::set_value(parameter, planted_fields(p), parameter.integer ? std::round(value) : value);
}

GeneratorSettings generator_settings(const PlantedParameters& p, int d, SinkMode sink_mode) {
    GeneratorSettings g;
    g.d = d;
    g.beta = p.beta;
    g.rho0 = p.rho0;
    g.sink_mode = sink_mode;
    g.norms = theory::assumption1_norms(p.profile.L, p.C, p.lambda);
    g.norm_cv = p.norm_cv;
    return g;
}

// Throws std::domain_error when a head's parameters break Assumptions 1–3 or the generator.
void check_head(const PlantedParameters& p, int d, SinkMode sink_mode) {
    theory::validate_assumption3(p.profile, "planted_head_parameters");
    (void)theory::assumption3_p_base(p.profile);  // an overflowing exponential phase
    if (!(p.beta > 0) || !std::isfinite(p.beta))
        throw_domain_error("planted_head_parameters",
                           "beta = " + format_double(p.beta) + ", expected > 0");
    if (!(std::abs(p.rho0) <= 1))
        throw_domain_error("planted_head_parameters",
                           "rho0 = " + format_double(p.rho0) + ", expected |rho0| <= 1");
    ValueGenerator generator(generator_settings(p, d, sink_mode));
}

std::string head_text(const PlantedParameters& p) {
    std::ostringstream s;
    s << "C=" << format_double(p.C) << " lambda=" << format_double(p.lambda)
      << " beta=" << format_double(p.beta) << " rho0=" << format_double(p.rho0)
      << " p_sink=" << format_double(p.profile.p_sink) << " eta=" << format_double(p.profile.eta)
      << " omega=" << format_double(p.profile.omega) << " T1=" << p.profile.T1
      << " T2=" << p.profile.T2;
    return s.str();
}

void check_request(const PlantedRequest& r) {
    if (r.heads < 1) throw InputError("--heads: " + std::to_string(r.heads) + ", expected >= 1");
    if (r.docs < 1) throw InputError("--docs: " + std::to_string(r.docs) + ", expected >= 1");
    // e^{σz} must stay finite for every normal the ziggurat can return (|z| < 40).
    if (!(r.alpha_noise >= 0) || !(r.alpha_noise <= 10))
        throw InputError("--alpha-noise: " + format_double(r.alpha_noise) +
                         ", expected 0 <= sigma <= 10");
    if (r.d < 1) throw InputError("--d: " + std::to_string(r.d) + ", expected >= 1");
    if (r.base.profile.L < 2)
        throw InputError("--L: " + std::to_string(r.base.profile.L) +
                         ", expected >= 2 for an extract folder (context L + 1 >= 3)");
    if (r.threads < 0) throw InputError("--threads: expected >= 0");
    for (std::size_t i = 0; i < r.draws.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (r.draws[i].name == r.draws[j].name)
                throw InputError("--draw: parameter '" + r.draws[i].name + "' given twice");
    const auto range = [&](const char* name) {
        return std::find_if(r.draws.begin(), r.draws.end(),
                            [&](const PlantedRange& x) { return x.name == name; });
    };
    const auto t1 = range("T1"), t2 = range("T2");
    if (t1 != r.draws.end() && t2 != r.draws.end() && t1->hi > t2->lo)
        throw InputError("--draw: T1's range ends at " + format_double(t1->hi) +
                         ", after T2's starts at " + format_double(t2->lo) +
                         ", expected T1 <= T2 in every head");
}

StatisticsSettings planted_settings(const PlantedRequest& r) {
    StatisticsSettings settings;
    settings.context = r.base.profile.L + 1;
    settings.max_lag = std::max(1, std::min(r.max_lag, settings.context - 2));
    settings.sizes = parse_selection_sizes(r.sizes, settings.context, "--N");
    settings.ranking = theory::parse_ranking(r.rank);
    settings.distance = theory::parse_distance(r.distance);
    return settings;
}

// One head's document: values [n, d] and α [n] as float32, as extract's capture hands them on.
void draw_document(const PlantedParameters& p, const ValueGenerator& generator,
                   const PlantedRequest& r, std::int64_t doc, int head, std::vector<float>& alpha,
                   std::vector<float>& values) {
    RandomStream value_stream(r.seed, kPlantedDocumentPoint, static_cast<std::uint32_t>(doc),
                              static_cast<std::uint32_t>(2 * head));
    theory::RowMatrix v;
    generator.draw_values(value_stream, v);
    values.assign(v.data(), v.data() + v.size());
    RandomStream alpha_stream(r.seed, kPlantedDocumentPoint, static_cast<std::uint32_t>(doc),
                              static_cast<std::uint32_t>(2 * head + 1));
    alpha = planted_alpha(p.profile, r.alpha_noise, alpha_stream);
}

ExtractRunInfo planted_run_info(const PlantedRequest& r, const StatisticsSettings& settings,
                                const nlohmann::json& synthetic) {
    ExtractRunInfo run;
    run.command = r.command_line;
    run.model = {"(planted)", "planted",
                 1,           r.heads,
                 r.heads,     r.d,
                 0,           "planted heads under Assumptions 1-3 (attngeo simulate --as-extract)",
                 "float32",   "cpu"};
    ExtractParameters& p = run.parameters;
    p.docs = r.docs;
    p.bos = "planted";
    p.seed = r.seed;
    p.sizes_spec = r.sizes;
    p.engine = "planted";
    p.metrics = uses_gram_path(settings) ? "theory/ certified Gram path per head"
                                         : "per-N reference (sparse N grid)";
    run.documents = {r.docs, r.docs, 0, r.docs};
    run.tokenizer = "none (planted)";
    // No token ids: the planted parameters and the seed make the run what it is.
    run.run_fingerprint =
        run_fingerprint(extract_settings_text(settings, run.model) + synthetic.dump(), {});
    return run;
}

// The base head's drawable parameters by key (manifest "base").
nlohmann::json base_json(const PlantedParameters& base) {
    PlantedParameters b = base;
    const theory::ParameterFields f = planted_fields(b);
    nlohmann::json j = nlohmann::json::object();
    for (const theory::ParameterDescriptor& p : theory::parameter_table()) {
        if (!drawable(p)) continue;
        if (p.integer)
            j[p.key] = *p.whole(f);
        else
            j[p.key] = *p.real(f);
    }
    return j;
}

nlohmann::json synthetic_json(const PlantedRequest& r,
                              const std::vector<PlantedParameters>& heads) {
    const PlantedParameters& b = r.base;
    nlohmann::json draws = nlohmann::json::object();
    for (const PlantedRange& range : r.draws)
        draws[range.name] = {range.lo, range.hi};
    return {{"kind", "planted"},
            {"truth", schema::file::planted_truth},
            {"heads", heads.size()},
            {"docs", r.docs},
            {"d", r.d},
            {"L", b.profile.L},
            {"seed", r.seed},
            {"alpha_noise", r.alpha_noise},
            {"sink_mode", to_string(r.sink_mode)},
            {"base", base_json(b)},
            {"draws", draws},
            {"model",
             "Each head: values from simulate's ValueGenerator (Assumptions 1-2 with the head's C, "
             "lambda, beta, rho0, norm_cv; fresh directions per document), alpha_0 = p_sink and "
             "alpha_i = (1 - p_sink) w_i exp(sigma z_i) / sum_j w_j exp(sigma z_j) for i >= 1 "
             "(w the Assumption-3 shape, z_i standard normal per document, sigma = "
             "alpha_noise); drawn parameters uniform on [lo, hi] per head (T1, T2 rounded). "
             "Statistics by HeadStatistics::add_document, as extract forms them."}};
}

}  // namespace

const std::vector<std::string>& drawable_parameters() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> keys;
        for (const theory::ParameterDescriptor& p : theory::parameter_table())
            if (drawable(p)) keys.push_back(p.key);
        return keys;
    }();
    return names;
}

PlantedRange parse_planted_range(const std::string& text) {
    const auto eq = text.find('='), colon = text.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || colon == std::string::npos)
        throw InputError("--draw '" + text + "': expected name=lo:hi");
    PlantedRange range;
    range.name = text.substr(0, eq);
    const auto& names = drawable_parameters();
    if (std::find(names.begin(), names.end(), range.name) == names.end()) {
        std::string list;
        for (const auto& n : names)
            list += (list.empty() ? "" : " ") + n;
        throw InputError("--draw '" + text + "': unknown parameter '" + range.name +
                         "', expected one of " + list);
    }
    range.lo = parse_finite_double(text.substr(eq + 1, colon - eq - 1), "--draw " + range.name);
    range.hi = parse_finite_double(text.substr(colon + 1), "--draw " + range.name);
    if (range.lo > range.hi)
        throw InputError("--draw '" + text + "': lo " + format_double(range.lo) + " > hi " +
                         format_double(range.hi));
    return range;
}

std::vector<PlantedParameters> planted_head_parameters(const PlantedRequest& r) {
    std::vector<PlantedParameters> heads(r.heads, r.base);
    for (int h = 0; h < r.heads; ++h) {
        for (std::size_t k = 0; k < r.draws.size(); ++k) {
            RandomStream stream(r.seed, kPlantedDrawPoint, static_cast<std::uint32_t>(h),
                                static_cast<std::uint32_t>(k));
            const PlantedRange& range = r.draws[k];
            set_parameter(heads[h], range.name,
                          range.lo + (range.hi - range.lo) * stream.next_open_uniform());
        }
        try {
            check_head(heads[h], r.d, r.sink_mode);
        } catch (const std::domain_error& e) {
            throw InputError(std::string(r.draws.empty() ? "--as-extract" : "--draw") + ": head " +
                             std::to_string(h) + " (" + head_text(heads[h]) + "): " + e.what());
        }
    }
    return heads;
}

std::vector<float> planted_alpha(const theory::Assumption3Profile& profile, double sigma,
                                 RandomStream& stream) {
    const int L = profile.L;
    std::vector<double> w(L + 1, 0.0);
    double total = 0;
    for (int i = 1; i <= L; ++i) {
        w[i] = theory::assumption3_shape(profile, i) * std::exp(sigma * stream.next_normal());
        total += w[i];
    }
    std::vector<float> alpha(L + 1);
    alpha[0] = static_cast<float>(profile.p_sink);
    for (int i = 1; i <= L; ++i)
        alpha[i] = static_cast<float>((1 - profile.p_sink) * w[i] / total);
    return alpha;
}

std::string planted_csv(const std::vector<PlantedParameters>& heads, int d, double alpha_noise) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::extract, schema::file::planted_truth) << '\n';
    for (std::size_t h = 0; h < heads.size(); ++h) {
        const PlantedParameters& p = heads[h];
        auto f = [](double x) { return format_double(x); };
        csv << 0 << ',' << h << ',' << p.profile.L << ',' << d << ',' << f(p.C) << ','
            << f(p.lambda) << ',' << f(p.beta) << ',' << f(p.rho0) << ',' << f(p.profile.p_sink)
            << ',' << f(theory::assumption3_p_base(p.profile)) << ',' << f(p.profile.eta) << ','
            << f(p.profile.omega) << ',' << p.profile.T1 << ',' << p.profile.T2 << ','
            << f(p.norm_cv) << ',' << f(alpha_noise) << '\n';
    }
    return csv.str();
}

nlohmann::json write_planted_extract(const PlantedRequest& r) {
    check_request(r);
    check_output_folder(r.out, "--as-extract");
    const StatisticsSettings settings = planted_settings(r);
    // One document's values per thread, in double and float32.
    check_allocation(checked_bytes(settings.context, r.d), 3 * sizeof(double),
                     "--d " + std::to_string(r.d) + " x --L: one document's values");
    // Each head's exact sums hold a few 128-bit words per position (norm, α, contribution).
    check_allocation(checked_bytes(r.heads, settings.context), 64,
                     "--heads " + std::to_string(r.heads) + ": the statistics grid");
    const std::vector<PlantedParameters> heads = planted_head_parameters(r);
    std::vector<ValueGenerator> generators;
    for (const PlantedParameters& p : heads)
        generators.emplace_back(generator_settings(p, r.d, r.sink_mode));
    StatisticsGrid grid = make_grid(1, r.heads, settings);
    const PerDocLayout layout = per_doc_layout(1, r.heads, settings);
    // The per-document arrays stay in memory (no spill): refuse sizes beyond the budget.
    check_allocation(checked_bytes(r.docs, layout.record_floats()), sizeof(float),
                     "--docs " + std::to_string(r.docs) + " x --heads " + std::to_string(r.heads) +
                         ": the per-document arrays");
    PerDocArrays per_doc(layout);
    const int threads = statistics_threads(r.threads);
    for (std::int64_t doc = 0; doc < r.docs; ++doc) {
        WindowRecord record(layout);
        std::vector<DocumentRecord> records(r.heads);
        for_each_head(r.heads, threads, [&](int h) {
            std::vector<float> alpha, values;
            draw_document(heads[h], generators[h], r, doc, h, alpha, values);
            records[h] = grid[0][h].add_document(alpha.data(), values.data(), r.d);
        });
        for (int h = 0; h < r.heads; ++h)
            record.set(0, h, records[h]);
        per_doc.append(record);
    }
    const nlohmann::json synthetic = synthetic_json(r, heads);
    const ExtractRunInfo run = planted_run_info(r, settings, synthetic);
    nlohmann::json manifest = extract_manifest(settings, run);
    manifest["synthetic"] = synthetic;
    write_extract_outputs(r.out, settings, grid, 1, r.docs,
                          [&](int tensor, std::ostream& stream) { per_doc.write(tensor, stream); },
                          extract_state_metadata(settings, run), manifest,
                          {{schema::file::planted_truth, planted_csv(heads, r.d, r.alpha_noise)}});
    return manifest;
}

}  // namespace attngeo::simulate
