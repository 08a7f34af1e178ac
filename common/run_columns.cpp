// The run-folder CSV column table (run_columns.hpp): one entry per (docs page, file), in the
// order the pages list them; the column text is the page's ```dtypes line.
#include "common/run_columns.hpp"

#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace attngeo::schema {
namespace {

struct TableEntry {
    const char* page;
    const char* file;
    // "name:type, name:type?, ...", or "same as PAGE/FILE": that entry's columns. Two
    // items stand for several columns: "{swept}" for a sweep's swept parameters (float, named
    // at run time) and "...PAGE/FILE from NAME [to LAST]" for a slice of another entry's columns.
    const char* columns;
};

// clang-format off
const TableEntry kTable[] = {
        {"bounds", "bounds.csv",
         "N:int, regime:str, Delta:float?, Delta0:float?, B:float?, P_lower:float, P_upper:float, "
         "R_lower:float, R_upper:float, Fmax_lower:float, Fmax_upper:float, Fmin_lower:float, "
         "Fmin_upper:float, delta_le0:flag, delta0_le0:flag, xi_le0:flag, P_inverted:flag, "
         "R_inverted:flag, P_trivial_lower:flag, R_trivial_lower:flag, P_trivial_upper:flag, "
         "R_trivial_upper:flag"},
        {"simulate", "simulate.csv",
         "N:int, trials:int, P_mean:float, P_se:float, P_ci_lo:float, P_ci_hi:float, "
         "R_mean:float, R_se:float, R_ci_lo:float, R_ci_hi:float, Fmax_mean:float, "
         "Fmin_mean:float"},
        {"simulate", "sums.csv",
         "grid:int, N:int, quantity:str, count:int, sum:bigint, sum_squares:bigint"},
        {"simulate", "bounds.csv",
         "N:int, variant:str, kappa:float?, regime:str, "
         "...bounds/bounds.csv from Delta to Fmin_upper, "
         "...compare/bounds.csv from kappa_P_lower"},
        {"simulate", "sweep.csv",
         "grid:int, {swept}, ...simulate/simulate.csv from N, variant:str, kappa:float?, "
         "P_lower:float, P_upper:float, R_lower:float, R_upper:float, P_lower_joint:float?, "
         "P_upper_joint:float?, R_lower_joint:float?, R_upper_joint:float?"},
        {"simulate", "kappa_scan.csv", "grid:int, {swept}, ...compare/kappa_scan.csv from variant"},
        {"simulate", "verdict.csv", "grid:int, {swept}, ...compare/verdict.csv from variant"},
        {"simulate", "claims.csv", "same as compare/claims.csv"},
        {"simulate", "table1.csv", "same as compare/table1.csv"},
        {"simulate", "calibration.csv",
         "metric:str, side:str, planted:bool, shift:float, runs:int, falsified:int, rate:float, "
         "ci_lo:float, ci_hi:float"},
        {"extract", "heads.csv",
         "layer:int, head:int, kv_head:int, docs:int, norm_mean:float, norm_median:float, "
         "cv_positional:float, cv_pooled:float, lambda:float, rho0:float, sink_mass:float, "
         "last_mass:float, m_sink:float, m_last:float, m_rest:float, regime:str, "
         "regime_margin:float"},
        {"extract", "pr.csv",
         "layer:int, head:int, N:int, docs:int, P_mean:float, P_se:float?, R_mean:float, "
         "R_se:float?, Fmax_mean:float, Fmin_mean:float, exact_decisions:int"},
        {"extract", "by_position.csv",
         "layer:int, head:int, pos:int, norm_mean:float, alpha_mean:float, contrib_mean:float"},
        {"extract", "cos_by_lag.csv",
         "layer:int, head:int, lag:int, cos_mean:float, pairs:int"},
        {"extract", "diag.csv",
         "layer:int, head:int, N:int, s_norm:float, s_norm_no_sink:float, "
         "s_norm_no_last:float, cos_s_v0:float, cos_s_vL:float"},
        {"extract", "snapshot.csv",
         "pos:int, alpha:float, selected:flag, pc1:float, pc2:float, contrib_norm:float, "
         "distance_to_s:float, cos_to_s:float"},
        {"extract", "contributions.csv",
         "layer:int, head:int, pos:int, alpha:float, contrib_norm:float, cos_to_s:float"},
        {"extract", "by_length.csv",
         "layer:int, head:int, length_lo:int, length_hi:int, N:int, queries:int, "
         "P_mean:float, P_se:float?, R_mean:float, R_se:float?"},
        {"extract", "heads_by_length.csv",
         "layer:int, head:int, length_lo:int, length_hi:int, queries:int, lambda:float, "
         "rho0:float, sink_mass:float, m_sink:float, m_last:float, m_rest:float, regime:str"},
        {"extract", "sinks.csv",
         "layer:int, head:int, kv_head:int, windows:int, sink_attention:float?, "
         "sink_share:float?, key_norm_ratio:float?, cos_query_sink:float?, "
         "cos_query_rest:float?"},
        {"extract", "sink_layers.csv",
         "layer:int, windows:int, sink_rate:float?, largest:float?, median:float?, "
         "ratio:float?, window:int?, position:int?, dim:int?, token_id:int?, "
         "massive_share:float?"},
        {"extract", "secondary_sinks.csv",
         "window:int, position:int, token_id:int, heads:int, largest_attention:float"},
        {"extract", "planted.csv",
         "layer:int, head:int, L:int, d:int, C:float, lambda:float, beta:float, rho0:float, "
         "p_sink:float, p_base:float, eta:float, omega:float, T1:int, T2:int, norm_cv:float, "
         "alpha_noise:float"},
        {"compare", "fits.csv",
         "layer:int, head:int, beta:float, mae:float, beta_offset:float, c_inf:float, "
         "mae_offset:float, lambda:float, C:float, cv_positional:float, cv_pooled:float, "
         "rho0:float, kv_head:int, counted:flag, beta_at_bound:flag, "
         "beta_offset_at_bound:flag, beta_lo:float?, beta_hi:float?, beta_offset_lo:float?, "
         "beta_offset_hi:float?, c_inf_lo:float?, c_inf_hi:float?, lambda_lo:float?, "
         "lambda_hi:float?, C_lo:float?, C_hi:float?, rho0_lo:float?, rho0_hi:float?, "
         "unidentified:str?"},
        {"compare", "profile.csv",
         "layer:int, head:int, p_sink:float?, p_base:float?, eta:float?, omega:float?, "
         "T1:int?, T2:int?, r2_log:float?, rmse_log:float?, eta_at_bound:flag, "
         "omega_at_bound:flag, p_sink_at_bound:flag, at_bound:flag, fit_failed:flag, "
         "p_sink_lo:float?, p_sink_hi:float?, p_base_lo:float?, p_base_hi:float?, "
         "eta_lo:float?, eta_hi:float?, omega_lo:float?, omega_hi:float?, T1_lo:float?, "
         "T1_hi:float?, T2_lo:float?, T2_hi:float?, unidentified:str?"},
        {"compare", "profile_global.csv",
         "p_sink:float, p_base:float, eta:float, omega:float, T1:int, T2:int, r2_log:float, "
         "rmse_log:float, eta_at_bound:flag, omega_at_bound:flag, p_sink_at_bound:flag, "
         "at_bound:flag, p_sink_lo:float?, p_sink_hi:float?, p_base_lo:float?, "
         "p_base_hi:float?, eta_lo:float?, eta_hi:float?, omega_lo:float?, omega_hi:float?, "
         "T1_lo:float?, T1_hi:float?, T2_lo:float?, T2_hi:float?, unidentified:str?"},
        {"compare", "assumptions.csv",
         "layer:int, head:int, kv_head:int, counted:flag, lambda:float, cv_positional:float, "
         "cv_pooled:float, compressed_sink:flag, stable_norms:flag, A1_holds:flag, "
         "beta:float, mae_exp:float, mae_constant:float, mae_zero:float, "
         "negative_cos_share:float, beta_uninformative:flag, A2_holds:flag, p_sink:float?, "
         "p_base:float?, r2_log:float?, sink_mass:float, sink_exists:flag, "
         "profile_r2_ok:flag, profile_identified:flag, A3_holds:flag"},
        {"compare", "bounds.csv",
         "layer:int, head:int, N:int, variant:str, kappa:float?, P_mean:float, R_mean:float, "
         "P_lower:float, P_upper:float, R_lower:float, R_upper:float, P_inside:flag, "
         "R_inside:flag, regime:str, Delta:float?, Delta0:float?, B:float?, "
         "kappa_P_lower:float, kappa_P_upper:float, kappa_R_lower:float, kappa_R_upper:float, "
         "P_lower_edge:float, P_upper_edge:float, R_lower_edge:float, R_upper_edge:float, "
         "...bounds/bounds.csv from delta_le0, sink_selected:flag, convention:flag, identity:flag, "
         "z_P_lower:float?, z_P_upper:float?, z_R_lower:float?, z_R_upper:float?, "
         "falsified_P_lower:flag, falsified_P_upper:flag, falsified_R_lower:flag, "
         "falsified_R_upper:flag, contradicted_P_lower:flag, contradicted_P_upper:flag, "
         "contradicted_R_lower:flag, contradicted_R_upper:flag, informative_P_lower:flag, "
         "informative_P_upper:flag, informative_R_lower:flag, informative_R_upper:flag"},
        {"compare", "kappa_scan.csv",
         "variant:str, metric:str, side:str, kappa:float, consistent:flag, "
         "falsified_points:int, contradicted_points:int, max_z:float?, worst_N:int?, "
         "critical_value:float?, critical_rule:str?, mean_gap:float, mean_width:float"},
        {"compare", "verdict.csv",
         "variant:str, metric:str, side:str, state:str, kappa_set:str, kappa_edge:float?, "
         "gap_at_edge:float?, falsified_at_edge:int?, kappa_judged:float, kappa_given:flag, "
         "falsified_at_judged:int, contradicted_at_judged:int, worst_N:int?, "
         "worst_layer:int?, worst_head:int?, worst_z:float?, worst_excess:float?, "
         "critical_value:float?, band_method:str, units:int, contradiction_set:str?, "
         "contradicted_most:int, persistent_points:int, persistent_N:str?, points:int, "
         "convention_points:int, identity_points:int, informative_points:int, "
         "informative_fraction:float, informative:flag, informative_N:str?, "
         "at_limit_points:int, n_only_points:int, information_share:float?, kappa_free:flag, "
         "nearly_kappa_free:flag, largest_move:float, points_moving:int, "
         "kappa_edge_first_half:float?, first_half_empty:flag?, "
         "falsified_on_second_half:flag?, gap_on_second_half:float?, "
         "replicates_on_split:flag?, mean_width:float?, gap_I:float?, gap_II:float?, "
         "gap_III:float?, gap_IV:float?, gap_V:float?, points_I:int, points_II:int, "
         "points_III:int, points_IV:int, points_V:int, fraction_degenerate:float?"},
        {"compare", "envelope.csv",
         "variant:str, N:int, heads:int, P_mean:float, R_mean:float, P_lower:float, "
         "P_upper:float, R_lower:float, R_upper:float"},
        {"compare", "agreement.csv",
         "variant:str, scope:str, layer:int, points:int, inside:int, fraction:float, "
         "worst_excess:float"},
        {"compare", "violations.csv",
         "variant:str, layer:int, head:int, N:int, metric:str, value:float, lower:float, "
         "upper:float, excess:float"},
        {"compare", "corr_rho0.csv",
         "N:int, heads:int, corr:float?, ci_lo:float?, ci_hi:float?, replicates:int, "
         "head_lo:float?, head_hi:float?, partial_layer:float?, partial_lo:float?, "
         "partial_hi:float?"},
        {"compare", "sink_relations.csv",
         "measure:str, quantity:str, N:int?, heads:int, corr:float?, head_lo:float?, "
         "head_hi:float?, partial_layer:float?, partial_lo:float?, partial_hi:float?"},
        {"compare", "claims.csv",
         "claim:str, statement:str, variant:str?, answer:str, quantity:str, value:float?, "
         "ci_lo:float?, ci_hi:float?, units:str, rule:str, detail:str"},
        {"compare", "regimes.csv",
         "layer:int, head:int, regime:str, regime_margin:float, m_sink:float, m_last:float, "
         "m_rest:float, sink_mass:float, last_mass:float, regime_wording:str, "
         "rules_agree:flag, stability:float?, stability_wording:float?"},
        {"compare", "regime_counts.csv",
         "layer:int, Retriever:int, Mixer:int, Reset:int"},
        {"compare", "pr_by_regime.csv",
         "regime:str, N:int, heads:int, P_mean:float, R_mean:float"},
        {"compare", "contrib_by_regime.csv",
         "regime:str, pos:int, heads:int, alpha_mean:float, contrib_mean:float"},
        {"compare", "recovery.csv",
         "layer:int, head:int, parameter:str, planted:float, truth:float, fitted:float?, "
         "lo:float?, hi:float?, exact:flag?, covered:flag?, flagged:flag"},
        {"compare", "recovery_coverage.csv",
         "parameter:str, heads:int, fitted:int, with_interval:int, exact:int, covered:int, "
         "coverage:float?, flagged:int, unflagged:int, unflagged_covered:int, "
         "unflagged_coverage:float?, median_abs_error:float?, max_abs_error:float?"},
        {"compare", "by_length_summary.csv",
         "length_lo:int, length_hi:int, length_mean:float, N:int, heads:int, P_mean:float, "
         "R_mean:float, P_head_sd:float?, R_head_sd:float?"},
        {"compare", "regimes_by_length.csv",
         "length_lo:int, length_hi:int, length_mean:float, heads:int, Retriever:float, "
         "Mixer:float, Reset:float"},
        {"compare", "verdict_plug_in.csv", "same as compare/verdict.csv"},
        {"compare", "kappa_scan_plug_in.csv", "same as compare/kappa_scan.csv"},
        {"compare", "universal_kappa.csv",
         "variant:str, metric:str, side:str, kappa_set:str, kappa_edge:float?, "
         "gap_at_edge:float?, models:int, models_consistent:int, state:str"},
        {"compare", "table1.csv",
         "parameter:str, N:int, dP_lower:float?, dP_upper:float?, dR_lower:float?, "
         "dR_upper:float?, dFmax_lower:float?, dFmax_upper:float?, dFmin_lower:float?, "
         "dFmin_upper:float?"},
        {"truncate", "truncate.csv",
         "policy:str, renorm:str, scope:str, layer:int, head:int, N:int, docs:int, "
         "delta_nll:float, delta_nll_se:float?, delta_nll_lo:float?, delta_nll_hi:float?, "
         "kl:float, kl_se:float?, top1:float, dropped_mass:float, output_error:float"},
        {"truncate", "effective_size.csv",
         "policy:str, renorm:str, scope:str, layer:int, head:int, tau:float, N_star:int?, "
         "N_star_lo:float?, N_star_hi:float?, replicates:int, compression:float?, "
         "compression_lo:float?, compression_hi:float?"},
        {"truncate", "geometry_link.csv",
         "policy:str, renorm:str, N:int, quantity:str, heads:int, spearman:float?, "
         "ci_lo:float?, ci_hi:float?, replicates:int, p_value:float?, head_lo:float?, "
         "head_hi:float?, family:flag, tests:int, p_holm:float?, adj_lo:float?, "
         "adj_hi:float?, excludes_zero:flag?"},
        {"truncate", "head_link.csv",
         "policy:str, renorm:str, layer:int, head:int, N:int, delta_nll:float, "
         "precision:float, recall:float, f_score:float, dropped_mass:float, "
         "output_error:float, lambda:float, rho0:float, beta:float?, regime:str"},
        {"truncate", "claims.csv", "same as compare/claims.csv"},
        {"normalization", "distance.csv",
         "layer:int, head:int, length_lo:int, length_hi:int, N:int, queries:int, distance:float, "
         "random_mean:float, random_se:float?, random_rms_exact:float"},
        {"normalization", "separability.csv",
         "layer:int, head:int, length_lo:int, length_hi:int, N:int, queries:int, "
         "separability:float"},
        {"normalization", "sensitivity.csv",
         "layer:int, head:int, temperature:float, epsilon:float, queries:int, g:float"},
        {"normalization", "critical_n.csv",
         "length_lo:int, length_hi:int, length_mean:float, N:int, heads:int, ks_statistic:float, "
         "p_value:float, indistinguishable:flag"},
        {"normalization", "critical_n_by_length.csv",
         "length_lo:int, length_hi:int, length_mean:float, critical_N:float?, fraction:float?"},
};
// clang-format on

using Key = std::pair<std::string, std::string>;

const TableEntry& table_entry(const Key& key) {
    for (const TableEntry& entry : kTable)
        if (key.first == entry.page && key.second == entry.file) return entry;
    throw std::logic_error("run_columns: no columns for " + key.second + " on page " + key.first);
}

Key reference_key(const std::string& reference) {
    const auto slash = reference.find('/');
    return {reference.substr(0, slash), reference.substr(slash + 1)};
}

std::string trimmed(const std::string& item) {
    return item.substr(item.find_first_not_of(' '));
}

using Table = std::map<Key, std::vector<Column>>;

const std::vector<Column>& resolved_columns(const Key& key, Table& table);

std::size_t column_index(const std::vector<Column>& columns, const std::string& name) {
    for (std::size_t i = 0; i < columns.size(); ++i)
        if (columns[i].name == name) return i;
    throw std::logic_error("run_columns: no column " + name);
}

// columns[first .. last], both included (last empty: to the end).
std::vector<Column> column_slice(const std::vector<Column>& columns, const std::string& first,
                                 const std::string& last) {
    const std::size_t begin = column_index(columns, first);
    const std::size_t end = last.empty() ? columns.size() - 1 : column_index(columns, last);
    return {columns.begin() + begin, columns.begin() + end + 1};
}

// "...PAGE/FILE from FIRST" or "...PAGE/FILE from FIRST to LAST": that entry's columns from
// FIRST on (to LAST, included).
std::vector<Column> columns_from(const std::string& item, Table& table) {
    const std::string from = " from ", to = " to ";
    const auto split = item.find(from);
    const auto until = item.find(to, split);
    const std::vector<Column>& source =
        resolved_columns(reference_key(item.substr(3, split - 3)), table);
    return column_slice(source, item.substr(split + from.size(), until - split - from.size()),
                        until == std::string::npos ? "" : item.substr(until + to.size()));
}

Column parse_column(const std::string& item) {
    if (item == kSweptParameters) return Column{item, "float", false, true};
    const auto colon = item.rfind(':');
    Column column{item.substr(0, colon), item.substr(colon + 1)};
    if (!column.type.empty() && column.type.back() == '?') {
        column.type.pop_back();
        column.may_be_empty = true;
    }
    return column;
}

std::vector<Column> parse_columns(const std::string& text, Table& table) {
    const std::string same_as = "same as ";
    if (text.rfind(same_as, 0) == 0)
        return resolved_columns(reference_key(text.substr(same_as.size())), table);
    std::vector<Column> columns;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        item = trimmed(item);
        if (item.rfind("...", 0) == 0) {
            const std::vector<Column> tail = columns_from(item, table);
            columns.insert(columns.end(), tail.begin(), tail.end());
        } else {
            columns.push_back(parse_column(item));
        }
    }
    return columns;
}

// The columns of `key`, parsed into `table` with the entries it refers to (which may come later
// in kTable) the first time they are needed.
const std::vector<Column>& resolved_columns(const Key& key, Table& table) {
    const auto found = table.find(key);
    if (found != table.end()) return found->second;
    std::vector<Column> columns = parse_columns(table_entry(key).columns, table);
    return table.emplace(key, std::move(columns)).first->second;
}

// Every entry parsed once, at first use.
const Table& parsed_table() {
    static const Table table = [] {
        Table out;
        for (const TableEntry& entry : kTable)
            resolved_columns({entry.page, entry.file}, out);
        return out;
    }();
    return table;
}

}  // namespace

const std::vector<Column>& csv_columns(const std::string& page, const std::string& file) {
    const Table& table = parsed_table();
    const auto found = table.find({page, file});
    if (found == table.end())
        throw std::logic_error("run_columns: no columns for " + file + " on page " + page);
    return found->second;
}

std::vector<std::string> csv_column_names(const std::string& page, const std::string& file,
                                          const std::string& first, const std::string& last) {
    std::vector<std::string> names;
    for (const Column& column : column_slice(csv_columns(page, file), first, last))
        names.push_back(column.name);
    return names;
}

std::string csv_header(const std::string& page, const std::string& file,
                       const std::vector<std::string>& swept) {
    std::string header;
    for (const Column& column : csv_columns(page, file)) {
        if (!column.swept_parameters) {
            header += (header.empty() ? "" : ",") + column.name;
            continue;
        }
        for (const std::string& name : swept)
            header += (header.empty() ? "" : ",") + name;
    }
    return header;
}

std::vector<std::string> csv_column_names(const std::string& page, const std::string& file) {
    std::vector<std::string> names;
    for (const Column& column : csv_columns(page, file))
        names.push_back(column.name);
    return names;
}

std::vector<std::string> csv_column_names(const std::string& page, const std::string& file,
                                          std::initializer_list<const char*> names) {
    const std::vector<Column>& columns = csv_columns(page, file);
    std::vector<std::string> out;
    for (const char* name : names) {
        bool known = false;
        for (const Column& column : columns)
            known = known || column.name == name;
        if (!known) throw std::logic_error("run_columns: " + file + " has no column " + name);
        out.emplace_back(name);
    }
    return out;
}

const std::vector<std::string>& fitted_parameters() {
    static const std::vector<std::string> names = {"beta", "beta_offset", "c_inf",  "lambda",
                                                   "C",    "rho0",        "p_sink", "p_base",
                                                   "eta",  "omega",       "T1",     "T2"};
    return names;
}

std::vector<std::string> csv_pages() {
    std::vector<std::string> pages;
    for (const TableEntry& entry : kTable)
        if (pages.empty() || pages.back() != entry.page) pages.emplace_back(entry.page);
    return pages;
}

std::string dtypes_block(const std::string& page) {
    std::string block;
    for (const TableEntry& entry : kTable) {
        if (page != entry.page) continue;
        block += std::string(entry.file) + ":";
        const char* separator = " ";
        for (const Column& column : csv_columns(entry.page, entry.file)) {
            block += separator + column.name + ":" + column.type + (column.may_be_empty ? "?" : "");
            separator = ", ";
        }
        block += "\n";
    }
    return block;
}

}  // namespace attngeo::schema
