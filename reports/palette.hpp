// The figures' colours in one place: one per bound variant, per head regime, per followed
// series, per κ-scan side and per model, and the fixed roles (the measurement, its band, the
// sink, the simulation, the fit, neutral marks, grid lines...). gnuplot takes them as 'rgb'
// strings.
#pragma once
#include <array>
#include <cstddef>

#include "theory/bounds.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::reports::palette {

// [4] in theory::bound_variants() order: paper, exact-mean, scale-invariant, corrected.
inline constexpr std::array<const char*, 4> kVariant = {"#d95f02", "#1b9e77", "#7570b3", "#66a61e"};
// [4] line width and lower-bound dash pattern of each variant, in the same order. Envelopes of
// different variants often coincide (the paper upper bound equals the scale-invariant one where
// B cancels), so each variant has its own width, drawn widest first, and its own dash: a line
// under a coinciding one still shows as a coloured rim or a different dash. Upper bounds solid.
inline constexpr std::array<double, 4> kVariantWidth = {4.2, 3.0, 1.9, 1.0};
inline constexpr std::array<const char*, 4> kVariantLowerDash = {"(14,6)", "(7,5)", "(3,4)",
                                                                 "(1,3)"};
// [3] in theory::kHeadRegimes order: Retriever, Mixer, Reset.
inline constexpr std::array<const char*, 3> kRegime = {"#e6550d", "#3182bd", "#31a354"};
// [5] the followed N of a sweep panel, in ascending N.
inline constexpr std::array<const char*, 5> kSeries = {"#08519c", "#d95f02", "#1b9e77", "#7570b3",
                                                       "#e7298a"};
// [4] the κ-scan curves: P lower, P upper, R lower, R upper.
inline constexpr std::array<const char*, 4> kScanSide = {"#1b9e77", "#d95f02", "#7570b3",
                                                         "#e7298a"};
// [4] background bands of the Table-2 regimes II, III, IV, V on the simulation figures.
inline constexpr std::array<const char*, 4> kTable2Band = {"#fbfbfb", "#eef4fb", "#fdf3e7",
                                                           "#f3eefa"};
// [10] one per model of a cross-model figure, in command-line order: apart from each other and
// readable on white (Tableau 10); beyond ten models they repeat with another dash pattern.
inline constexpr std::array<const char*, 10> kModel = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                       "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
                                                       "#7f7f7f", "#bcbd22"};
// [3] the diverging scale of a cosine colour bar at -1, 0 and 1.
inline constexpr std::array<const char*, 3> kCosineScale = {"#2166ac", "#f7f7f7", "#b2182b"};

inline constexpr const char* kMeasured = "#08519c";      // the measured or Monte Carlo mean
inline constexpr const char* kMeasuredBand = "#9ecae1";  // its interval or interquartile band
inline constexpr const char* kSink = "#b00020";          // the sink token; failures
inline constexpr const char* kSimulation = "#e7298a";    // a simulation beside a measurement
inline constexpr const char* kFit = "#d95f02";           // a fitted curve over measurements
inline constexpr const char* kNeutral = "#444444";       // key entries, measured points
inline constexpr const char* kGuide = "#888888";         // reference lines and arrows
inline constexpr const char* kGridLine = "#e5e5e5";
inline constexpr const char* kSelected = "#c51b7d";        // the selected tokens I_N
inline constexpr const char* kLastToken = "#e6550d";       // a curve of the last token v_L
inline constexpr const char* kWithoutLast = "#31a354";     // s(N) with the last token left out
inline constexpr const char* kHistogram = "#3182bd";       // histogram bars
inline constexpr const char* kHistogramOther = "#e6550d";  // the second histogram of a pair
inline constexpr const char* kBarBorder = "#ffffff";       // the gap between adjacent bars
inline constexpr const char* kOptimum = "#222222";         // a chosen optimum (κ_edge)
inline constexpr const char* kConsistent = "#d9f0d3";      // the consistent κ of a scan
inline constexpr const char* kBandLabel = "#777777";       // the name of a background band
inline constexpr const char* kMarkLabel = "#555555";       // the label beside a guide mark

inline const char* variant(std::size_t index) {
    return kVariant.at(index % kVariant.size());
}

inline double variant_width(std::size_t index) {
    return kVariantWidth.at(index % kVariantWidth.size());
}

inline const char* variant_lower_dash(std::size_t index) {
    return kVariantLowerDash.at(index % kVariantLowerDash.size());
}

inline const char* regime(theory::HeadRegime regime) {
    for (std::size_t r = 0; r < theory::kHeadRegimes.size(); ++r)
        if (theory::kHeadRegimes[r] == regime) return kRegime[r];
    return kNeutral;
}

}  // namespace attngeo::reports::palette
