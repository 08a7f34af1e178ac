// The empirical report's figures (Figures 2–8, 10, 11), each a Figure built from the loaders'
// aggregates; `prefix` ("runK_") keeps the figure ids of several runs apart. Internal to
// reports/.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/empirical_data.hpp"
#include "reports/figure.hpp"

namespace attngeo::reports::empirical {

// Figure 2 (left): mean value norm by position over all heads, with the interquartile band.
Figure norm_figure(const std::string& prefix, const ExtractData& e);
// Figure 2 (right): histograms of the coefficient of variation of the non-sink norms.
Figure cv_figure(const std::string& prefix, const std::vector<double>& cv_positional,
                 const std::vector<double>& cv_pooled, const std::string& source,
                 const std::string& unit = "heads");
// Figure 3 (left): histogram of the exponential fit's MAE over heads.
Figure mae_figure(const std::string& prefix, const std::vector<double>& mae,
                  const std::string& source, const std::string& unit = "heads");
// Figure 3 (right): measured cos by lag with both fitted models, for the heads at the 10th,
// 50th and 90th percentile of the MAE; nullopt when no head has a finite fit.
std::optional<Figure> fit_examples_figure(const std::string& prefix, const ExtractData& e,
                                          const std::vector<FitRow>& fits, int fit_lags,
                                          const std::string& fits_source);
// Figure 4: mean α by position over heads (log y), optionally with the fitted profile; `e`
// may be null (the extract folder is gone), then only the fit is drawn.
Figure alpha_figure(const std::string& prefix, const ExtractData* e,
                    const std::optional<FittedProfile>& fit, const std::string& fit_source);

// What Figure 5 draws besides the measured means: each optional (null / empty when absent).
struct PrOverlays {
    const Envelopes* envelopes = nullptr;
    std::string envelope_source;
    const std::map<int, MeanPR>* simulation = nullptr;
    std::string simulation_source;
};
// Figure 5: global mean P and R against N, optionally with envelopes and a simulation.
Figure pr_figure(const std::string& prefix, const std::map<int, MeanPR>& measured,
                 const std::string& measured_source, const PrOverlays& overlays);
// Figure 6: corr(R(r_min, N), ρ0) across heads against N, with the bootstrap interval.
Figure corr_figure(const std::string& prefix, const CsvTable& corr, const nlohmann::json& manifest);
// Figure 7: ‖s(N)‖ with leave-one-out variants, and cos(s, v_0), cos(s, v_L), for the most
// typical head of each regime; nullopt (and `note` says why) when there is no head.
std::optional<Figure> diagnostics_figure(const std::string& prefix, const ExtractData& e,
                                         std::string& note);
// Figure 8: regime counts per layer, stacked. `counts`: layer → heads per regime.
Figure regime_counts_figure(const std::string& prefix, const std::map<int, PerRegime<int>>& counts,
                            const std::string& source, const std::string& boundary_note = "");
// Figure 10: mean contribution ‖α_i v_i‖ by position per regime (log y).
Figure contrib_figure(const std::string& prefix, const PerRegime<std::vector<double>>& curves,
                      const PerRegime<int>& heads, const std::string& source);
// Figure 11: mean P and R against N per regime.
Figure pr_by_regime_figure(const std::string& prefix,
                           const PerRegime<std::map<int, MeanPR>>& series,
                           const std::string& source);

// The head of each regime with the largest normalised margin (−1 where a regime has none), as
// Figures 7 and 10 choose them.
PerRegime<int> most_typical_heads(const ExtractData& e);

// head_figures.cpp. Figure 1: the snapshot head's contributions on their two leading
// principal axes with s(N) and circles r_min, r_max (extract's snapshot.csv and snapshot.json);
// nullopt when the folder has none.
std::optional<Figure> snapshot_figure(const std::string& prefix, const std::string& dir);
// Figure 10 as the paper draws it: ‖α_i v_i‖ by position of the snapshot window for the head
// `chosen` of each regime, coloured by cos(v_i, s(N)) (contributions.csv); nullopt without it.
std::optional<Figure> contribution_scatter_figure(const std::string& prefix, const ExtractData& e,
                                                  const PerRegime<int>& chosen);
// Table 2's trend: Δ/B and Δ_0/B of every (head, N) of bounds.csv's paper rows against N,
// coloured by regime I–V, with the median over heads; nullopt without usable rows.
std::optional<Figure> margin_trend_figure(const std::string& prefix,
                                          const std::string& bounds_path);

// length_figures.cpp: statistics against the context length L of an extract run with
// --queries other than last (docs/design.md §14).
using LengthBinKey = std::pair<int, int>;  // (length_lo, length_hi) of L = t + 1
struct LengthCurves {
    std::map<LengthBinKey, double> length_mean;  // the x of each bin
    bool length_is_midpoint = false;  // some bin's length_mean was not recorded: its midpoint
    std::map<int, std::map<LengthBinKey, MeanPR>> pr;  // N → bin → means over heads
    // bin → (share of heads per regime, heads)
    std::map<LengthBinKey, std::pair<PerRegime<double>, int>> regimes;
    std::string pr_source, regime_source;
};
// From the extract's by_length.csv and heads_by_length.csv (length_mean from the manifest's
// parameters.length_bins); nullopt without by_length.csv. InputError naming a missing
// heads_by_length.csv or a damaged file.
std::optional<LengthCurves> extract_length_curves(const ExtractData& e);
// From a compare folder's by_length_summary.csv and regimes_by_length.csv; nullopt without the
// summary.
std::optional<LengthCurves> compare_length_curves(const std::string& dir);
// The section of the two figures: P and R against L at up to four N, regime shares against L.
Section length_section(const std::string& prefix, const LengthCurves& curves);

}  // namespace attngeo::reports::empirical
