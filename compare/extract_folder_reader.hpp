// Reading an `attngeo extract` folder back (docs/design.md §6–7): manifest.json and the four
// per-head tables compare needs (heads.csv, pr.csv, by_position.csv, cos_by_lag.csv), checked
// strictly so that a truncated or hand-edited folder is an InputError naming the file, never a
// wrong fit.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::compare {

// Everything measured for one (layer, head).
struct EmpiricalHead {
    int layer = 0, head = 0, kv_head = 0;
    std::int64_t docs = 0;  // documents averaged
    // heads.csv: document-mean norms, their CVs, λ = ‖v_0‖ / median_{i≥1}‖v_i‖, ρ0, masses.
    double norm_mean = 0, norm_median = 0, cv_positional = 0, cv_pooled = 0;
    double lambda = 0, rho0 = 0, sink_mass = 0, last_mass = 0;
    double m_sink = 0, m_last = 0, m_rest = 0;  // ‖α_0v_0‖, ‖α_Lv_L‖, ‖Σ_rest α_iv_i‖
    theory::HeadRegime regime = theory::HeadRegime::retriever;  // heads.csv's regime
    double regime_margin = 1;  // >= 1 (+inf allowed): how clearly the magnitudes decide it
    // pr.csv, over the run's N grid.                                               [S]
    std::vector<double> P_mean, R_mean, Fmax_mean, Fmin_mean;
    // Standard errors over documents; missing (an empty field in pr.csv) when the head has
    // fewer than 2 documents, where a standard error is undefined.                 [S]
    std::vector<std::optional<double>> P_se, R_se;
    // by_position.csv, positions 0..n−1 (0 = sink, n = context).                   [n]
    std::vector<double> norm_by_position, alpha_by_position, contrib_by_position;
    // cos_by_lag.csv, lags 1..K.                                                   [K]
    std::vector<double> cos_by_lag;
    std::vector<std::int64_t> pairs_by_lag;
};

// One extract folder.
struct EmpiricalRun {
    std::string dir;          // as given
    nlohmann::json manifest;  // manifest.json as read
    int layers = 0, heads = 0, head_dim = 0;
    int context = 0;                  // n tokens per window, sink included (L = n − 1)
    int max_lag = 0;                  // K: lags 1..K in cos_by_lag.csv
    std::vector<int> sizes;           // [S] the N grid of pr.csv, ascending
    std::vector<EmpiricalHead> rows;  // [layers · heads], index layer · heads + head

    const EmpiricalHead& at(int layer, int head) const {
        return rows[static_cast<std::size_t>(layer) * heads + head];
    }
};

// Reads `dir`. manifest.json must have kind "extract", model.layers/heads/head_dim and
// parameters.context; every CSV must hold its named columns (any order, extra columns
// ignored), one row per (layer, head[, N | pos | lag]) with no gaps or duplicates, finite
// numbers only, except that P_se and R_se are empty when docs < 2 (and only then) and
// regime_margin may be +inf. Any defect is an InputError naming the file (with line and column
// where there is one) and what was expected.
EmpiricalRun read_empirical_run(const std::string& dir);

// Checks shared by the readers of extract tables (read_empirical_run and the by-length reader):
// the index in run.rows of a row's (layer, head), range-checked against the manifest's layers
// and heads; "layer L head H" of an index, for messages; a row's regime (Retriever, Mixer or
// Reset). Each throws InputError naming the file, line and column.
std::size_t checked_head_index(const CsvRow& row, std::size_t layer_column, std::size_t head_column,
                               const EmpiricalRun& run);
std::string head_name(std::size_t index, int heads);
theory::HeadRegime checked_regime(const CsvRow& row, std::size_t column);

}  // namespace attngeo::compare
