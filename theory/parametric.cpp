// Parametric heads and Table-1 sensitivities; see parametric.hpp.
#include "theory/parametric.hpp"

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace attngeo::theory {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Eigen::VectorXd profile_weights(const ModelParameters& p) {
    if (p.alpha) return *p.alpha;
    switch (p.profile_kind.kind) {
        case ProfileSpec::Kind::assumption3:
            return assumption3_weights(p.profile);
        case ProfileSpec::Kind::uniform:
            return uniform_weights(p.profile.L);
        case ProfileSpec::Kind::zipf:
            return zipf_weights(p.profile.L, p.profile_kind.zipf_exponent);
        case ProfileSpec::Kind::file:
            break;
    }
    throw std::domain_error("build_head_model: a file: profile must be loaded into alpha first");
}

using Bounds8 = std::array<double, 8>;

std::vector<Bounds8> bound_columns(const ModelParameters& p, const std::vector<int>& sizes,
                                   const BoundSettings& s) {
    std::vector<Bounds8> out;
    for (const BoundRow& r : bounds_all(build_head_model(p), sizes, s)) {
        out.push_back({r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
                       r.fmax_lower, r.fmax_upper, r.fmin_lower, r.fmin_upper});
    }
    return out;
}

}  // namespace

int token_count(const ModelParameters& p) {
    return p.alpha ? static_cast<int>(p.alpha->size()) : p.profile.L + 1;
}

HeadModel build_head_model(const ModelParameters& p) {
    HeadModel m;
    m.alpha = profile_weights(p);
    const int L = static_cast<int>(m.alpha.size()) - 1;
    m.norms = p.norms ? *p.norms : assumption1_norms(L, p.C, p.lambda);
    m.cosine = p.cosine ? *p.cosine : exponential_cosine_matrix(L, p.beta, p.rho0);
    validate_head_model(m, "build_head_model");
    return m;
}

std::optional<PhaseParameters> phase_parameters(const ModelParameters& p) {
    if (p.alpha || p.profile_kind.kind != ProfileSpec::Kind::assumption3) return std::nullopt;
    return PhaseParameters{assumption3_p_base(p.profile), p.profile.eta};
}

namespace {

// One parameter of Table 1: how to read and move it, and whether its derivative is taken in
// log x (real or integer steps) or in x itself.
struct Knob {
    std::string name;
    enum { log_real, log_integer, linear } kind;
    std::function<double(const ModelParameters&, const BoundSettings&)> get;
    std::function<void(ModelParameters&, BoundSettings&, double)> set;
};

// Assumption 3's phase parameters.
void add_phase_knobs(std::vector<Knob>& knobs) {
    knobs.push_back({"p_sink", Knob::log_real, [](auto& p, auto&) { return p.profile.p_sink; },
                     [](auto& p, auto&, double v) { p.profile.p_sink = v; }});
    knobs.push_back({"T1", Knob::log_integer, [](auto& p, auto&) { return double(p.profile.T1); },
                     [](auto& p, auto&, double v) { p.profile.T1 = int(v); }});
    knobs.push_back({"T2", Knob::log_integer, [](auto& p, auto&) { return double(p.profile.T2); },
                     [](auto& p, auto&, double v) { p.profile.T2 = int(v); }});
    knobs.push_back({"eta", Knob::log_real, [](auto& p, auto&) { return p.profile.eta; },
                     [](auto& p, auto&, double v) { p.profile.eta = v; }});
    knobs.push_back({"omega", Knob::log_real, [](auto& p, auto&) { return p.profile.omega; },
                     [](auto& p, auto&, double v) { p.profile.omega = v; }});
}

// The parameters that describe this head: d and κ always; the profile's, the norms' and the
// cosines' only where they are not given explicitly.
std::vector<Knob> sensitivity_knobs(const ModelParameters& params) {
    std::vector<Knob> knobs = {
        {"d", Knob::log_real, [](auto&, auto& s) { return s.d; },
         [](auto&, auto& s, double v) { s.d = v; }},
        {"kappa", Knob::log_real, [](auto&, auto& s) { return s.kappa; },
         [](auto&, auto& s, double v) { s.kappa = v; }},
    };
    const bool profile_is_parametric = !params.alpha;
    if (profile_is_parametric) {
        knobs.push_back({"L", Knob::log_integer, [](auto& p, auto&) { return double(p.profile.L); },
                         [](auto& p, auto&, double v) { p.profile.L = int(v); }});
    }
    if (!params.norms) {
        knobs.push_back({"C", Knob::log_real, [](auto& p, auto&) { return p.C; },
                         [](auto& p, auto&, double v) { p.C = v; }});
        knobs.push_back({"lambda", Knob::log_real, [](auto& p, auto&) { return p.lambda; },
                         [](auto& p, auto&, double v) { p.lambda = v; }});
    }
    if (!params.cosine) {
        knobs.push_back({"beta", Knob::log_real, [](auto& p, auto&) { return p.beta; },
                         [](auto& p, auto&, double v) { p.beta = v; }});
        knobs.push_back({"rho0", Knob::linear, [](auto& p, auto&) { return p.rho0; },
                         [](auto& p, auto&, double v) { p.rho0 = v; }});
    }
    if (profile_is_parametric && params.profile_kind.kind == ProfileSpec::Kind::assumption3)
        add_phase_knobs(knobs);
    if (profile_is_parametric && params.profile_kind.kind == ProfileSpec::Kind::zipf) {
        knobs.push_back({"zipf_s", Knob::log_real,
                         [](auto& p, auto&) { return p.profile_kind.zipf_exponent; },
                         [](auto& p, auto&, double v) { p.profile_kind.zipf_exponent = v; }});
    }
    return knobs;
}

// The bounds with one knob moved to `value`; nullopt when that value is invalid.
std::optional<std::vector<Bounds8>> bounds_with(const Knob& knob, double value,
                                                const ModelParameters& params,
                                                const std::vector<int>& sizes,
                                                const BoundSettings& settings) {
    ModelParameters p = params;
    BoundSettings s = settings;
    knob.set(p, s, value);
    try {
        return bound_columns(p, sizes, s);
    } catch (const std::domain_error&) {
        return std::nullopt;
    }
}

// One knob's rows: the central difference of every bound column at every N, one-sided where a
// step leaves the valid range, NaN where neither side can move.
std::vector<SensitivityRow> knob_rows(const Knob& knob, const ModelParameters& params,
                                      const std::vector<int>& sizes,
                                      const BoundSettings& settings) {
    const auto at = [&](double value) { return bounds_with(knob, value, params, sizes, settings); };
    const auto coordinate = [&](double value) {
        return knob.kind == Knob::linear ? value : std::log(value);
    };
    const double x = knob.get(params, settings);
    double lo = x, hi = x;
    if (knob.kind == Knob::log_real) {
        lo = x * std::exp(-1e-4);
        hi = x * std::exp(1e-4);
    } else if (knob.kind == Knob::log_integer) {
        lo = x - 1;
        hi = x + 1;
    } else {
        lo = x - 1e-4;
        hi = x + 1e-4;
    }
    auto f_lo = (knob.kind == Knob::log_integer && lo <= 0) ? std::nullopt : at(lo);
    auto f_hi = at(hi);
    if (!f_lo) {  // one-sided at the edge of the valid range
        lo = x;
        f_lo = at(x);
    }
    if (!f_hi) {
        hi = x;
        f_hi = at(x);
    }
    const bool usable = f_lo && f_hi && hi != lo && (knob.kind == Knob::linear || lo > 0);
    const double step = usable ? coordinate(hi) - coordinate(lo) : kNaN;
    std::vector<SensitivityRow> rows;
    for (std::size_t s = 0; s < sizes.size(); ++s) {
        SensitivityRow row;
        row.N = sizes[s];
        row.parameter = knob.name;
        double* out[8] = {&row.precision_lower, &row.precision_upper, &row.recall_lower,
                          &row.recall_upper,    &row.fmax_lower,      &row.fmax_upper,
                          &row.fmin_lower,      &row.fmin_upper};
        for (int c = 0; c < 8; ++c)
            *out[c] = usable ? ((*f_hi)[s][c] - (*f_lo)[s][c]) / step : kNaN;
        rows.push_back(row);
    }
    return rows;
}

}  // namespace

std::vector<SensitivityRow> bound_sensitivities(const ModelParameters& params,
                                                const std::vector<int>& sizes,
                                                const BoundSettings& settings) {
    std::vector<SensitivityRow> rows;
    for (const Knob& knob : sensitivity_knobs(params)) {
        const std::vector<SensitivityRow> knob_part = knob_rows(knob, params, sizes, settings);
        rows.insert(rows.end(), knob_part.begin(), knob_part.end());
    }
    return rows;
}

}  // namespace attngeo::theory
