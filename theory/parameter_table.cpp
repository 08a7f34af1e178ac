// The parameter table and the range checks it drives; see parameter_table.hpp.
#include "theory/parameter_table.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "theory/model_source.hpp"

namespace attngeo::theory {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
using G = ParameterGroup;

// Ranges: open / closed ends (docs/design.md section 4 and section 10).
constexpr ParameterRange positive{0, kInf, false, false};
constexpr ParameterRange non_negative{0, kInf, true, false};
constexpr ParameterRange unit_open{0, 1, false, false};
constexpr ParameterRange finite{-kInf, kInf, false, false};
// The metrics and bounds do not depend on the value norm's scale, but the simulator forms float32
// Gram matrices of values ~C (C² overflows float32 beyond ~1e19; --C 1e200 crashed a trial):
// nine decades either side of 1 keep every product finite and normal.
constexpr ParameterRange norm_scale{1e-9, 1e9, true, true};

std::vector<ParameterDescriptor> make_table() {
    namespace p = paper_preset;
    using F = const ParameterFields&;
    return {
        {"L",
         "--L",
         G::length,
         true,
         true,
         double(p::L),
         {1, kInf, true, false},
         true,
         true,
         "Index of the last token; n = L + 1 tokens",
         nullptr,
         [](F f) { return &f.profile->L; }},
        {"p_sink", "--p-sink", G::assumption3, false, true, p::p_sink, unit_open, true, true,
         "Assumption 3: attention mass of the sink token", [](F f) { return &f.profile->p_sink; },
         nullptr},
        {"T1", "--T1", G::assumption3, true, true, double(p::T1), non_negative, true, true,
         "Assumption 3: end of the constant phase", nullptr, [](F f) { return &f.profile->T1; }},
        {"T2", "--T2", G::assumption3, true, true, double(p::T2), non_negative, true, true,
         "Assumption 3: end of the oscillatory phase", nullptr, [](F f) { return &f.profile->T2; }},
        {"eta", "--eta", G::assumption3, false, true, p::eta, non_negative, true, true,
         "Assumption 3: oscillation amplitude and recency growth rate",
         [](F f) { return &f.profile->eta; }, nullptr},
        {"omega", "--omega", G::assumption3, false, true, p::omega, finite, true, true,
         "Assumption 3: oscillation frequency", [](F f) { return &f.profile->omega; }, nullptr},
        {"C", "--C", G::norms, false, true, p::C, norm_scale, true, true,
         "Assumption 1: value norm of non-sink tokens", [](F f) { return f.C; }, nullptr},
        {"lambda", "--lambda", G::norms, false, true, p::lambda, unit_open, true, true,
         "Assumption 1: sink norm ratio, 0 < lambda < 1", [](F f) { return f.lambda; }, nullptr},
        {"beta", "--beta", G::cosines, false, true, p::beta, positive, true, true,
         "Assumption 2: cosine decay rate, cos = exp(-beta |i-j|)", [](F f) { return f.beta; },
         nullptr},
        {"rho0",
         "--rho0",
         G::cosines,
         false,
         true,
         p::rho0,
         {-1, 1, true, true},
         true,
         false,
         "Assumption 2: cosine between the sink and every other token",
         [](F f) { return f.rho0; },
         nullptr},
        {"d",
         "--d",
         G::setting,
         false,
         true,
         p::d,
         {1, kInf, true, false, true},
         true,
         true,
         "Value dimension d (default: the LLaMA-2-7B head size), or inf for the d -> infinity "
         "limit",
         [](F f) { return f.d; },
         nullptr},
        {"kappa", "--kappa", G::setting, false, false, p::kappa, positive, true, true,
         "Concentration constant kappa of eq. (31) (the paper gives none)",
         [](F f) { return f.kappa; }, nullptr},
        {"zipf_s", "", G::zipf, false, false, kNone, non_negative, true, true,
         "Exponent s of --profile zipf:s (alpha_i proportional to (i + 1)^-s)",
         [](F f) { return f.zipf_s; }, nullptr},
        {"norm_cv", "--norm-cv", G::generator, false, false, p::norm_cv, non_negative, true, true,
         "Log-normal noise on the value norms with this CV (0 = Assumption 1 exactly)",
         [](F f) { return f.norm_cv; }, nullptr},
    };
}

std::string number_text(double x) {
    return std::isinf(x) ? (x > 0 ? "inf" : "-inf") : format_double(x);
}

// The field behind `parameter`; std::logic_error where `fields` has none.
void require_field(const ParameterDescriptor& parameter, const void* field) {
    if (field == nullptr)
        throw std::logic_error(std::string("parameter_table: no field for ") + parameter.key);
}

}  // namespace

ParameterFields parameter_fields(ModelParameters& params) {
    ParameterFields f;
    f.profile = &params.profile;
    f.C = &params.C;
    f.lambda = &params.lambda;
    f.beta = &params.beta;
    f.rho0 = &params.rho0;
    f.zipf_s = &params.profile_kind.zipf_exponent;
    return f;
}

ParameterFields parameter_fields(ModelSource& source) {
    ParameterFields f;
    f.profile = &source.assumption3;
    f.C = &source.C;
    f.lambda = &source.lambda;
    f.beta = &source.beta;
    f.rho0 = &source.rho0;
    return f;
}

const std::vector<ParameterDescriptor>& parameter_table() {
    static const std::vector<ParameterDescriptor> table = make_table();
    return table;
}

const ParameterDescriptor* find_parameter(const std::string& key) {
    for (const ParameterDescriptor& p : parameter_table())
        if (key == p.key) return &p;
    return nullptr;
}

const ParameterDescriptor& parameter(const std::string& key) {
    const ParameterDescriptor* p = find_parameter(key);
    if (p == nullptr) throw std::logic_error("parameter: no parameter '" + key + "'");
    return *p;
}

bool is_head_flag(const ParameterDescriptor& p) {
    return p.group == G::length || p.group == G::norms || p.group == G::cosines ||
           p.group == G::assumption3;
}

std::vector<std::string> sweepable_keys() {
    std::vector<std::string> keys;
    for (const ParameterDescriptor& p : parameter_table())
        if (p.sweepable) keys.push_back(p.key);
    return keys;
}

std::string range_text(const ParameterDescriptor& p) {
    const ParameterRange& r = p.range;
    const std::string name = p.integer ? std::string("an integer ") + p.key : p.key;
    std::string text;
    if (std::isinf(r.lo) && std::isinf(r.hi)) return std::string("a finite ") + p.key;
    if (std::isinf(r.hi))
        text = name + (r.lo_closed ? " >= " : " > ") + number_text(r.lo);
    else if (std::isinf(r.lo))
        text = name + (r.hi_closed ? " <= " : " < ") + number_text(r.hi);
    else
        text = (p.integer ? "an integer " : "") + number_text(r.lo) +
               (r.lo_closed ? " <= " : " < ") + p.key + (r.hi_closed ? " <= " : " < ") +
               number_text(r.hi);
    return r.infinity_allowed ? text + " or inf" : text;
}

bool in_range(const ParameterDescriptor& p, double x) {
    const ParameterRange& r = p.range;
    if (std::isinf(x) && x > 0 && r.infinity_allowed) return true;
    if (!std::isfinite(x)) return false;
    if (p.integer && (x != std::floor(x) || std::abs(x) > 1e9)) return false;
    const bool above = r.lo_closed ? x >= r.lo : x > r.lo;
    const bool below = r.hi_closed ? x <= r.hi : x < r.hi;
    return above && below;
}

std::string value_text(const ParameterDescriptor& p, double x) {
    if (p.integer && std::isfinite(x) && x == std::floor(x) && std::abs(x) <= 1e9)
        return std::to_string(static_cast<long long>(x));
    return number_text(x);
}

double get_value(const ParameterDescriptor& p, const ParameterFields& f) {
    if (p.integer) {
        require_field(p, f.profile);
        return *p.whole(f);
    }
    double* field = p.real(f);
    require_field(p, field);
    return *field;
}

void set_value(const ParameterDescriptor& p, const ParameterFields& f, double x) {
    if (p.integer) {
        require_field(p, f.profile);
        *p.whole(f) = static_cast<int>(x);
        return;
    }
    double* field = p.real(f);
    require_field(p, field);
    *field = x;
}

std::string flag_label(const ParameterDescriptor& p, const std::string& value) {
    return std::string(p.flag) + " " + value;
}

std::string key_label(const ParameterDescriptor& p, const std::string& value) {
    return std::string(p.key) + " = " + value;
}

void check_value(const ParameterDescriptor& p, double x, const ParameterLabel& label) {
    if (!in_range(p, x))
        throw InputError(label(p, value_text(p, x)) + ": expected " + range_text(p));
}

bool group_in_use(ParameterGroup group, const ModelParameters& params) {
    const bool parametric = !params.alpha;
    switch (group) {
        case G::length:
            return parametric;
        case G::norms:
            return !params.norms;
        case G::cosines:
            return !params.cosine;
        case G::assumption3:
            return parametric && params.profile_kind.kind == ProfileSpec::Kind::assumption3;
        case G::zipf:
            return parametric && params.profile_kind.kind == ProfileSpec::Kind::zipf;
        case G::setting:
        case G::generator:
            return false;  // not part of the head
    }
    return false;
}

void check_head_parameters(const ModelParameters& params, const ParameterLabel& label) {
    const ParameterFields f = parameter_fields(const_cast<ModelParameters&>(params));
    for (const ParameterDescriptor& p : parameter_table())
        if (group_in_use(p.group, params)) check_value(p, get_value(p, f), label);
    if (!group_in_use(G::assumption3, params)) return;
    const Assumption3Profile& a = params.profile;
    const auto named = [&](const char* key, double x) {
        return label(parameter(key), value_text(parameter(key), x));
    };
    if (!(a.T1 <= a.T2 && a.T2 <= a.L))
        throw InputError(named("T1", a.T1) + ", " + named("T2", a.T2) + ", " + named("L", a.L) +
                         ": expected 0 <= T1 <= T2 <= L");
    if (a.T1 < a.T2 && !(a.eta < 1))
        throw InputError(named("eta", a.eta) +
                         ": expected eta < 1 when T1 < T2 (the weights must stay positive)");
}

namespace {

// Markdown table cell text: a literal | would end the cell.
std::string table_cell(const std::string& text) {
    std::string cell;
    for (char c : text)
        cell += c == '|' ? std::string("\\|") : std::string(1, c);
    return cell;
}

}  // namespace

std::string parameter_table_markdown() {
    std::string text =
        "# Model parameters\n\n"
        "Generated from `theory/parameter_table.cpp` (the one table the CLI, manifests, `--set`, "
        "Table 1\nand Python read); `tests/theory/test_parameter_table.cpp` checks this file "
        "against it.\nThe paper preset is docs/design.md section 4.\n\n"
        "| key | flag | default | valid range | sweepable | meaning |\n"
        "|---|---|---|---|---|---|\n";
    for (const ParameterDescriptor& p : parameter_table()) {
        const std::string flag = *p.flag ? std::string("`") + p.flag + "`" : "`--profile zipf:s`";
        const std::string value =
            std::isnan(p.default_value) ? "none" : value_text(p, p.default_value);
        text += std::string("| `") + p.key + "` | " + flag + " | " + value + " | " + range_text(p) +
                " | " + (p.sweepable ? "yes" : "no") + " | " + table_cell(p.help) + " |\n";
    }
    return text +
           "\nAlso checked: 0 <= T1 <= T2 <= L, and eta < 1 when T1 < T2 (Assumption 3). "
           "`kappa` has no default in `simulate` and `sweep` (fitted per variant); `simulate` "
           "needs an integer d <= 1e6 (or inf).\n";
}

}  // namespace attngeo::theory
