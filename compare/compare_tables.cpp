// The CSV tables of a compare folder; see compare_tables.hpp.
#include "compare/compare_tables.hpp"

#include <cmath>
#include <sstream>
#include <vector>

#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::compare {
namespace {

std::string header_line(const char* file) {
    return schema::csv_header(schema::page::compare, file) + '\n';
}

// The interval fields of parameters [first, last] (<name>_lo,<name>_hi each, then
// "unidentified": the unidentified parameters' names joined by ';'); all empty without
// intervals.
std::string interval_fields(const ParameterIntervals* intervals, int first, int last) {
    auto field = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
    std::string fields, names;
    for (int p = first; p <= last; ++p) {
        const Interval none;
        const Interval& i = intervals ? (*intervals)[p] : none;
        fields += "," + field(i.lo) + "," + field(i.hi);
        if (i.unidentified) names += (names.empty() ? "" : ";") + std::string(parameter_name(p));
    }
    return fields + "," + names;
}

const ParameterIntervals* head_intervals(const FitResults& fits, std::size_t i) {
    return fits.intervals.available ? &fits.intervals.heads[i] : nullptr;
}

std::string fits_csv(const CompareInputs& in, const FitResults& fits) {
    std::ostringstream csv;
    csv << header_line(schema::file::fits);
    for (std::size_t i = 0; i < in.run.rows.size(); ++i) {
        const EmpiricalHead& h = in.run.rows[i];
        const HeadFits& fit = fits.heads[i];
        csv << h.layer << ',' << h.head << ',' << format_double(fit.decay.beta) << ','
            << format_double(fit.decay.mae) << ',' << format_double(fit.offset.beta) << ','
            << format_double(fit.offset.c_inf) << ',' << format_double(fit.offset.mae) << ','
            << format_double(h.lambda) << ',' << format_double(h.norm_median) << ','
            << format_double(h.cv_positional) << ',' << format_double(h.cv_pooled) << ','
            << format_double(h.rho0) << ',' << h.kv_head << ',' << int(in.counted[i]) << ','
            << int(beta_at_bound(fit.decay.beta)) << ',' << int(beta_at_bound(fit.offset.beta))
            << interval_fields(head_intervals(fits, i), kBeta, kRho0) << '\n';
    }
    return csv.str();
}

// The fields of a profile fit and its clamp flags, shared by profile.csv (one row per head)
// and profile_global.csv (the fit to the mean over heads, one row).
std::string profile_fields(const ProfileFit& p) {
    const ProfileClamps clamps = profile_clamps(p);
    std::ostringstream row;
    row << format_double(p.profile.p_sink) << ',' << format_double(p.p_base) << ','
        << format_double(p.profile.eta) << ',' << format_double(p.profile.omega) << ','
        << p.profile.T1 << ',' << p.profile.T2 << ',' << format_double(p.r2_log) << ','
        << format_double(p.rmse_log) << ',' << int(clamps.eta) << ',' << int(clamps.omega) << ','
        << int(clamps.p_sink) << ',' << int(clamps.any()) << '\n';
    return row.str();
}

// One row per head; a head whose profile could not be fitted has empty fitted fields, zero
// clamp flags and fit_failed = 1 (the manifest's profile_fits_failed says why).
std::string profile_csv(const EmpiricalRun& run, const FitResults& fits) {
    std::ostringstream csv;
    csv << header_line(schema::file::profile);
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        std::string fields = profile_fields(fits.heads[i].profile);
        const bool failed = !fits.heads[i].profile_failure.empty();
        if (failed) fields = ",,,,,,,,0,0,0,0\n";
        fields.insert(fields.size() - 1,
                      (failed ? ",1" : ",0") +
                          interval_fields(failed ? nullptr : head_intervals(fits, i), kPSink, kT2));
        csv << run.rows[i].layer << ',' << run.rows[i].head << ',' << fields;
    }
    return csv.str();
}

std::string regimes_csv(const EmpiricalRun& run, const RegimeLabels& labels) {
    auto field = [](double x) { return std::isnan(x) ? std::string() : format_double(x); };
    std::ostringstream csv;
    csv << header_line(schema::file::regimes);
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const EmpiricalHead& h = run.rows[i];
        const HeadLabels& label = labels.heads[i];
        csv << h.layer << ',' << h.head << ',' << theory::to_string(h.regime) << ','
            << format_double(h.regime_margin) << ',' << format_double(h.m_sink) << ','
            << format_double(h.m_last) << ',' << format_double(h.m_rest) << ','
            << format_double(h.sink_mass) << ',' << format_double(h.last_mass) << ','
            << theory::to_string(label.wording) << ','
            << int(theory::same_label(label.magnitudes, label.wording)) << ','
            << field(label.stability) << ',' << field(label.stability_wording) << '\n';
    }
    return csv.str();
}

bool in_regime(const EmpiricalHead& h, theory::HeadRegime regime) {
    return h.regime == regime;
}

std::string regime_counts_csv(const EmpiricalRun& run) {
    std::ostringstream csv;
    csv << header_line(schema::file::regime_counts);
    for (int l = 0; l < run.layers; ++l) {
        csv << l;
        for (theory::HeadRegime regime : theory::kHeadRegimes) {
            int count = 0;
            for (int h = 0; h < run.heads; ++h)
                count += in_regime(run.at(l, h), regime);
            csv << ',' << count;
        }
        csv << '\n';
    }
    return csv.str();
}

// Plain means over the heads of each regime: P and R by N, α and the contribution by position.
// A regime without heads has no rows.
void regime_mean_csvs(const EmpiricalRun& run, CompareTables& tables) {
    std::ostringstream pr, contrib;
    pr << header_line(schema::file::pr_by_regime);
    contrib << header_line(schema::file::contrib_by_regime);
    for (theory::HeadRegime regime : theory::kHeadRegimes) {
        const char* name = theory::to_string(regime);
        std::vector<const EmpiricalHead*> members;
        for (const auto& h : run.rows)
            if (in_regime(h, regime)) members.push_back(&h);
        if (members.empty()) continue;
        const double m = static_cast<double>(members.size());
        for (std::size_t s = 0; s < run.sizes.size(); ++s) {
            double P = 0, R = 0;
            for (const auto* h : members)
                P += h->P_mean[s], R += h->R_mean[s];
            pr << name << ',' << run.sizes[s] << ',' << members.size() << ','
               << format_double(P / m) << ',' << format_double(R / m) << '\n';
        }
        for (int pos = 0; pos < run.context; ++pos) {
            double alpha = 0, sum = 0;
            for (const auto* h : members)
                alpha += h->alpha_by_position[pos], sum += h->contrib_by_position[pos];
            contrib << name << ',' << pos << ',' << members.size() << ','
                    << format_double(alpha / m) << ',' << format_double(sum / m) << '\n';
        }
    }
    tables.pr_by_regime = pr.str();
    tables.contrib_by_regime = contrib.str();
}

}  // namespace

CompareTables compare_tables(const CompareInputs& in, const FitResults& fits,
                             const RegimeLabels& labels) {
    CompareTables tables;
    tables.fits = fits_csv(in, fits);
    tables.profile = profile_csv(in.run, fits);
    std::string row = profile_fields(fits.global_profile);
    row.insert(
        row.size() - 1,
        interval_fields(fits.intervals.available ? &fits.intervals.global : nullptr, kPSink, kT2));
    tables.profile_global = header_line(schema::file::profile_global) + row;
    tables.regimes = regimes_csv(in.run, labels);
    tables.regime_counts = regime_counts_csv(in.run);
    regime_mean_csvs(in.run, tables);
    return tables;
}

}  // namespace attngeo::compare
