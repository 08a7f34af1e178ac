// The one table of a parametric head's parameters and the run settings beside them
// (docs/design.md section 4): per parameter its flag, manifest key, paper-preset default, valid
// range, whether a sweep may vary it, its help text and the field it sets. The CLI, manifests,
// `--set`, Table 1, Python and docs/parameters.md all read it.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace attngeo::theory {

// The paper preset (docs/design.md section 4): the only spelling of these defaults; the structs
// that hold the parameters and the table below read them.
namespace paper_preset {
constexpr int L = 1024;
constexpr double p_sink = 0.3;
constexpr int T1 = 100;
constexpr int T2 = 800;
constexpr double eta = 0.02;
constexpr double omega = 0.05;
constexpr double C = 1;
constexpr double lambda = 0.1;
constexpr double beta = 0.05;
constexpr double rho0 = 0;
constexpr double d = 128;    // the LLaMA-2-7B head size
constexpr double kappa = 1;  // bounds only; simulate fits kappa unless given
constexpr double norm_cv = 0;
}  // namespace paper_preset

struct Assumption3Profile;
struct ModelParameters;
struct ModelSource;

// Where each parameter lives for one head and run: pointers into the caller's structs, null
// where the caller has no such value (zipf_s in a ModelSource, where --profile holds it).
struct ParameterFields {
    Assumption3Profile* profile = nullptr;
    double* C = nullptr;
    double* lambda = nullptr;
    double* beta = nullptr;
    double* rho0 = nullptr;
    double* zipf_s = nullptr;
    double* d = nullptr;
    double* kappa = nullptr;
    double* norm_cv = nullptr;
};
ParameterFields parameter_fields(ModelParameters& params);
ParameterFields parameter_fields(ModelSource& source);

// What a parameter describes; a group is used only where the head does not replace it with an
// explicit file (Table 1 and the range checks skip unused groups).
enum class ParameterGroup { setting, length, norms, cosines, assumption3, zipf, generator };

// A valid range: lo < x (lo <= x when lo_closed), x < hi (x <= hi when hi_closed); an infinite
// end excludes infinity, unless infinity_allowed (d = inf is the d -> infinity limit).
struct ParameterRange {
    double lo, hi;
    bool lo_closed, hi_closed;
    bool infinity_allowed = false;
};

struct ParameterDescriptor {
    const char* key;   // manifest key, --set name and Python keyword (lambda: lambda_)
    const char* flag;  // CLI flag, "" where another flag carries it (zipf_s: --profile zipf:s)
    ParameterGroup group;
    bool integer;
    bool from_preset;      // its default is the paper preset's (listed in from_preset)
    double default_value;  // NaN: none (kappa in simulate is fitted; zipf_s comes with --profile)
    ParameterRange range;
    bool sweepable;
    bool log_scale;  // Table 1 differentiates in log x; otherwise in x (rho0 can be <= 0)
    const char* help;
    double* (*real)(const ParameterFields&);  // the field, for a real parameter
    int* (*whole)(const ParameterFields&);    // the field, for an integer one
};

// Every parameter, in the CLI's order (L, p_sink, ..., rho0, d, kappa, zipf_s, norm_cv).
const std::vector<ParameterDescriptor>& parameter_table();
// The entry named `key`, or nullptr.
const ParameterDescriptor* find_parameter(const std::string& key);
// The entry named `key`; std::logic_error if there is none (a programming error).
const ParameterDescriptor& parameter(const std::string& key);
// Whether the parameter is one of a ModelSource's head values (L, p_sink, ..., rho0): the flags
// that add_model_options registers, the manifest's "model" keys, Python's model keywords.
bool is_head_flag(const ParameterDescriptor& parameter);
// The keys a sweep may vary, in table order.
std::vector<std::string> sweepable_keys();

// "0 < p_sink < 1", "an integer L >= 1", "d >= 1 or inf", "a finite omega".
std::string range_text(const ParameterDescriptor& parameter);
bool in_range(const ParameterDescriptor& parameter, double value);
// A value as the user would write it (integers without a fraction, reals by format_double).
std::string value_text(const ParameterDescriptor& parameter, double value);

// Reads and writes the parameter's field; std::logic_error where `fields` lacks it.
double get_value(const ParameterDescriptor& parameter, const ParameterFields& fields);
void set_value(const ParameterDescriptor& parameter, const ParameterFields& fields, double value);

// How a message names a parameter's value: "--p-sink 0" (a flag), "--set p_sink=0", "p_sink = 0"
// (a manifest key). The message is then "<label>: expected <range_text>".
using ParameterLabel =
    std::function<std::string(const ParameterDescriptor& parameter, const std::string& value)>;
std::string flag_label(const ParameterDescriptor& parameter, const std::string& value);
std::string key_label(const ParameterDescriptor& parameter, const std::string& value);

// attngeo::InputError "<label>: expected <range>" unless `value` is in the parameter's range.
void check_value(const ParameterDescriptor& parameter, double value, const ParameterLabel& label);

// Whether a group describes this head (not replaced by explicit α, norms or cosines).
bool group_in_use(ParameterGroup group, const ModelParameters& params);
// Checks every head parameter in use against its range, then 0 <= T1 <= T2 <= L and eta < 1
// when T1 < T2 (Assumption 3), throwing attngeo::InputError worded by `label`.
void check_head_parameters(const ModelParameters& params, const ParameterLabel& label);

// docs/parameters.md: the table as Markdown (a test checks the file against it).
std::string parameter_table_markdown();

}  // namespace attngeo::theory
