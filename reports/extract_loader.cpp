// Loaders of the empirical report: an extract folder streamed and aggregated over heads, a
// compare folder's files read whole (with the extract and simulation they name), and the
// fitted profile and simulation overlays. Figures and tables only format what these return.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "compare/extract_folder_reader.hpp"
#include "reports/empirical_data.hpp"
#include "reports/simulation_tables.hpp"
#include "reports/verdict.hpp"
#include "theory/assumption_models.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports::empirical {

int regime_index(theory::HeadRegime regime) {
    for (int r = 0; r < kRegimeCount; ++r)
        if (theory::kHeadRegimes[r] == regime) return r;
    return 0;  // unreachable: kHeadRegimes lists every regime
}

theory::HeadRegime parse_regime(const std::string& name, const std::string& file) {
    try {
        return theory::parse_head_regime(name);
    } catch (const std::domain_error&) {
        std::string names;
        for (int r = 0; r < kRegimeCount; ++r)
            names += std::string(r ? ", " : "") + regime_name(r);
        throw InputError("'" + file + "': regime '" + name + "' is none of " + names);
    }
}

const char* regime_name(int regime_index) {
    return theory::to_string(theory::kHeadRegimes.at(regime_index));
}

std::string path_in(const std::string& dir, const std::string& name) {
    return (fs::path(dir) / name).string();
}

std::string code(const std::string& text) {
    return "<code>" + html_escape(text) + "</code>";
}

// Quantile q of the finite values (linear interpolation); nan when there are none.
double quantile(std::vector<double> values, double q) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
        values.end());
    if (values.empty()) return std::nan("");
    std::sort(values.begin(), values.end());
    const double at = q * static_cast<double>(values.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(at));
    const std::size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

double mean_of(const std::vector<double>& values) {
    double sum = 0;
    int count = 0;
    for (double v : values)
        if (std::isfinite(v)) sum += v, ++count;
    return count ? sum / count : std::nan("");
}

std::string number_or_na(double x) {
    return std::isnan(x) ? "n/a" : short_number(x);
}

double optional_number(const CsvTable& table, std::size_t row, const std::string& column) {
    return table.text(row, column).empty() ? std::nan("") : table.number(row, column);
}

nlohmann::json read_json(const std::string& path) {
    return read_json_file(path, "a JSON file of an attngeo run folder");
}

std::string counting_unit(bool per_kv) {
    return per_kv ? "key/value heads (value-state statistics counted once per key/value head: "
                    "the query heads of a GQA group share them; compare --count-per kv)"
                  : "query heads (counted once per query head: a GQA group repeats its "
                    "key/value head's statistics; compare --count-per query)";
}

// Streams the named numeric columns of a CSV row by row (CsvTable would keep every field of
// a million-row file as a string), through the common reader and its error dialect.
void stream_numeric_csv(const std::string& path, const std::vector<std::string>& columns,
                        const std::function<void(const std::vector<double>&)>& row) {
    CsvReader reader(path, "a table written by attngeo extract or compare");
    std::vector<std::size_t> wanted;
    for (const auto& name : columns)
        wanted.push_back(reader.column(name));
    std::vector<double> values(columns.size());
    while (reader.next()) {
        for (std::size_t c = 0; c < wanted.size(); ++c)
            values[c] = reader.row().number(wanted[c]);
        row(values);
    }
}

// ---- an extract folder ---------------------------------------------------------------

namespace {

PositionStats position_stats(const std::vector<std::vector<double>>& by_position) {
    PositionStats s;
    for (const auto& values : by_position) {
        s.mean.push_back(mean_of(values));
        s.q25.push_back(quantile(values, 0.25));
        s.q75.push_back(quantile(values, 0.75));
        s.heads.push_back(static_cast<int>(values.size()));
    }
    return s;
}

// Heads per regime.
void count_regimes(const compare::EmpiricalRun& run, ExtractData& e) {
    for (const compare::EmpiricalHead& row : run.rows)
        e.regime_heads[regime_index(row.regime)]++;
}

// Norms and α by position over all heads, and the contribution by position per regime.
void aggregate_by_position(const compare::EmpiricalRun& run, ExtractData& e) {
    const auto positions = static_cast<std::size_t>(run.context);
    std::vector<std::vector<double>> norms(positions), alphas(positions);
    PerRegime<std::vector<double>> contrib_sum;
    PerRegime<std::vector<int>> contrib_count;
    for (int r = 0; r < kRegimeCount; ++r) {
        contrib_sum[r].assign(positions, 0.0);
        contrib_count[r].assign(positions, 0);
    }
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const compare::EmpiricalHead& row = run.rows[i];
        const int r = regime_index(row.regime);
        for (std::size_t p = 0; p < positions; ++p) {
            norms[p].push_back(row.norm_by_position[p]);
            alphas[p].push_back(row.alpha_by_position[p]);
            contrib_sum[r][p] += row.contrib_by_position[p];
            contrib_count[r][p]++;
        }
    }
    e.positions = run.context;
    e.norm = position_stats(norms);
    e.alpha = position_stats(alphas);
    for (int r = 0; r < kRegimeCount; ++r) {
        e.contrib_by_regime[r].resize(positions);
        for (std::size_t p = 0; p < positions; ++p)
            e.contrib_by_regime[r][p] =
                contrib_count[r][p] ? contrib_sum[r][p] / contrib_count[r][p] : std::nan("");
    }
}

// Mean P and R by N over all heads and per regime.
void aggregate_pr(const compare::EmpiricalRun& run, ExtractData& e) {
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const compare::EmpiricalHead& row = run.rows[i];
        for (std::size_t k = 0; k < run.sizes.size(); ++k) {
            const int N = run.sizes[k];
            e.max_n = std::max(e.max_n, N);
            auto add = [&](MeanPR& m) {
                m.p += row.P_mean[k];
                m.r += row.R_mean[k];
                m.heads++;
            };
            add(e.pr_global[N]);
            add(e.pr_by_regime[regime_index(row.regime)][N]);
        }
    }
    auto finish = [](std::map<int, MeanPR>& series) {
        for (auto& [N, m] : series)
            if (m.heads) m.p /= m.heads, m.r /= m.heads;
    };
    finish(e.pr_global);
    for (auto& series : e.pr_by_regime)
        finish(series);
}

}  // namespace

ExtractData load_extract(const std::string& dir) {
    ExtractData e;
    e.dir = dir;
    e.run = compare::read_empirical_run(dir);
    e.manifest = e.run.manifest;
    count_regimes(e.run, e);
    aggregate_by_position(e.run, e);
    aggregate_pr(e.run, e);
    return e;
}

// ---- a compare folder --------------------------------------------------------------------

namespace {

// fits.csv's rows, and the counted heads' MAE and CVs for the histograms.
void read_fit_rows(CompareFolder& c) {
    const CsvTable& fits = c.fits;
    for (std::size_t r = 0; r < fits.rows.size(); ++r) {
        c.fit_rows.push_back({static_cast<int>(fits.number(r, "layer")),
                              static_cast<int>(fits.number(r, "head")), fits.number(r, "beta"),
                              fits.number(r, "mae"), fits.number(r, "beta_offset"),
                              fits.number(r, "c_inf"), fits.number(r, "mae_offset")});
        if (fits.integer(r, "counted") == 0) continue;
        c.mae.push_back(c.fit_rows.back().mae);
        c.cv_positional.push_back(fits.number(r, "cv_positional"));
        c.cv_pooled.push_back(fits.number(r, "cv_pooled"));
    }
}

// envelope.csv's measured means, and Figure 5's envelopes at each side's judged κ from
// bounds.csv's *_edge columns.
void read_envelopes(CompareFolder& c, const std::string& dir) {
    const CsvTable& envelope = c.envelope;
    for (std::size_t r = 0; r < envelope.rows.size(); ++r) {
        const int N = static_cast<int>(envelope.number(r, "N"));
        MeanPR& m = c.envelope_means[N];
        if (m.heads == 0)
            m = {envelope.number(r, "P_mean"), envelope.number(r, "R_mean"),
                 static_cast<int>(envelope.number(r, "heads"))};
    }
    c.envelope_source = path_in(dir, schema::file::bounds);
    c.envelopes = mean_edge_envelopes(c.envelope_source);
}

// profile.csv (one row per head) and profile_global.csv (the fit to the mean over heads).
void read_profiles(CompareFolder& c, const std::string& dir) {
    c.profile = read_csv_table(path_in(dir, schema::file::profile));
    c.profile_global = read_csv_table(path_in(dir, schema::file::profile_global));
}

}  // namespace

CompareFolder load_compare(const RunFolder& run) {
    const std::string& dir = run.dir;
    CompareFolder c;
    c.fits = read_csv_table(path_in(dir, schema::file::fits));
    read_profiles(c, dir);
    c.envelope = read_csv_table(path_in(dir, schema::file::envelope));
    c.agreement = read_csv_table(path_in(dir, schema::file::agreement));
    c.violations = read_csv_table(path_in(dir, schema::file::violations));
    c.corr = read_csv_table(path_in(dir, schema::file::corr_rho0));
    c.kappa = read_json(path_in(dir, schema::file::kappa));
    // compare --count-per: query or kv. Read in place, not copied, so a bad value's pointer
    // still starts at /parameters.
    c.per_kv = with_json_context(run_manifest_path(dir), [&] {
        const std::string count_per =
            run.manifest.at("parameters").at("count_per").get<std::string>();
        if (count_per != "query" && count_per != "kv")
            throw InputError("'" + run_manifest_path(dir) + "': parameters.count_per '" +
                             count_per + "', expected query or kv");
        return count_per == "kv";
    });
    c.unit = counting_unit(c.per_kv);
    read_fit_rows(c);
    read_envelopes(c, dir);
    return c;
}

// The fitted global profile (profile_global.csv's first row) evaluated at positions 0..L with
// theory's Assumption-3 shape: α_0 = p_sink, α_i = p_base · w_i.
std::optional<FittedProfile> global_profile(const CsvTable& profile, int L) {
    for (std::size_t r = 0; r < profile.rows.size(); ++r) {
        theory::Assumption3Profile p;
        p.L = L;
        p.p_sink = profile.number(r, "p_sink");
        p.T1 = static_cast<int>(std::lround(profile.number(r, "T1")));
        p.T2 = static_cast<int>(std::lround(profile.number(r, "T2")));
        p.eta = profile.number(r, "eta");
        p.omega = profile.number(r, "omega");
        const double p_base = profile.number(r, "p_base");
        FittedProfile fit;
        try {
            p.T2 = std::min(p.T2, L);
            p.T1 = std::min(p.T1, p.T2);
            theory::validate_assumption3(p, "global_profile");
            fit.alpha.push_back(p.p_sink);
            for (int i = 1; i <= L; ++i)
                fit.alpha.push_back(p_base * theory::assumption3_shape(p, i));
        } catch (const std::domain_error&) {
            return std::nullopt;
        }
        std::ostringstream d;
        d << "the Assumption-3 profile fitted to the mean over heads (p<sub>sink</sub> = "
          << short_number(p.p_sink) << ", p<sub>base</sub> = " << short_number(p_base)
          << ", η = " << short_number(p.eta) << ", ω = " << short_number(p.omega)
          << ", T<sub>1</sub> = " << p.T1 << ", T<sub>2</sub> = " << p.T2
          << ", R² of log α = " << short_number(profile.number(r, "r2_log")) << ")";
        fit.description = d.str();
        return fit;
    }
    return std::nullopt;
}

int fit_lag_count(const nlohmann::json& manifest, const std::string& manifest_path) {
    return static_cast<int>(
        json_integer_at(manifest, "/parameters/max_lag_fit", 2, 1 << 24, manifest_path));
}

std::map<int, MeanPR> read_simulation(const std::string& dir) {
    const RunFolder run{dir, read_run_manifest(dir, {schema::kind::simulate}), 0};
    const CsvTable sim = read_simulate_tables(run).estimates;
    std::map<int, MeanPR> out;
    for (std::size_t r = 0; r < sim.rows.size(); ++r) {
        MeanPR& m = out[static_cast<int>(sim.number(r, "N"))];
        m.p = sim.number(r, "P_mean");
        m.r = sim.number(r, "R_mean");
        m.heads = 1;
    }
    return out;
}

}  // namespace attngeo::reports::empirical
