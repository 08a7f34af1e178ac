// Parametric heads and Table-1 sensitivities; see parametric.hpp.
#include "theory/parametric.hpp"

#include <array>
#include <cmath>
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

// One parameter of Table 1 (a row of theory/parameter_table): read and moved through its field,
// its derivative taken in log x (real or integer steps) or in x itself.
struct Knob {
    const ParameterDescriptor* parameter;
    enum { log_real, log_integer, linear } kind;
    double get(const ModelParameters& p, const BoundSettings& s) const {
        return get_value(*parameter,
                         fields(const_cast<ModelParameters&>(p), const_cast<BoundSettings&>(s)));
    }
    void set(ModelParameters& p, BoundSettings& s, double v) const {
        set_value(*parameter, fields(p, s), v);
    }
    static ParameterFields fields(ModelParameters& p, BoundSettings& s) {
        ParameterFields f = parameter_fields(p);
        f.d = &s.d;
        f.kappa = &s.kappa;
        return f;
    }
};

// The parameters that describe this head, in Table 1's order: d and kappa always; then the
// length, the norms', the cosines' and the profile's, each group only where it is not given
// explicitly (parameter_table's group_in_use).
std::vector<Knob> sensitivity_knobs(const ModelParameters& params) {
    using G = ParameterGroup;
    std::vector<Knob> knobs;
    for (G group : {G::setting, G::length, G::norms, G::cosines, G::assumption3, G::zipf}) {
        if (group != G::setting && !group_in_use(group, params)) continue;
        for (const ParameterDescriptor& p : parameter_table()) {
            if (p.group != group) continue;
            knobs.push_back({&p, p.integer     ? Knob::log_integer
                                 : p.log_scale ? Knob::log_real
                                               : Knob::linear});
        }
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
        row.parameter = knob.parameter->key;
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
