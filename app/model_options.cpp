// Shared head-model flags; see model_options.hpp.
#include "app/model_options.hpp"

namespace attngeo::cli {

void add_model_options(CLI::App& app, theory::ModelSource& o) {
    auto& a3 = o.assumption3;
    app.add_option("--preset", o.preset, "Parameter preset; every model value below defaults to it")
        ->check(CLI::IsMember({"paper"}))
        ->capture_default_str();
    app.add_option("--profile", o.profile,
                   "Attention profile: assumption3 | uniform | zipf:s | file:PATH (one weight per "
                   "line, normalised)")
        ->capture_default_str();
    app.add_option("--L", a3.L, "Index of the last token; n = L + 1 tokens")->capture_default_str();
    app.add_option("--p-sink", a3.p_sink, "Assumption 3: attention mass of the sink token")
        ->capture_default_str();
    app.add_option("--T1", a3.T1, "Assumption 3: end of the constant phase")->capture_default_str();
    app.add_option("--T2", a3.T2, "Assumption 3: end of the oscillatory phase")
        ->capture_default_str();
    app.add_option("--eta", a3.eta, "Assumption 3: oscillation amplitude and recency growth rate")
        ->capture_default_str();
    app.add_option("--omega", a3.omega, "Assumption 3: oscillation frequency")
        ->capture_default_str();
    app.add_option("--C", o.C, "Assumption 1: value norm of non-sink tokens")
        ->capture_default_str();
    app.add_option("--lambda", o.lambda, "Assumption 1: sink norm ratio, 0 < lambda < 1")
        ->capture_default_str();
    app.add_option("--beta", o.beta, "Assumption 2: cosine decay rate, cos = exp(-beta |i-j|)")
        ->capture_default_str();
    app.add_option("--rho0", o.rho0, "Assumption 2: cosine between the sink and every other token")
        ->capture_default_str();
    app.add_option("--alpha", o.alpha_file,
                   "File of n attention weights (one per line, sum 1); replaces the profile");
    app.add_option("--norms", o.norms_file,
                   "File of n value norms (one per line); replaces --C/--lambda");
    app.add_option("--cos", o.cos_file,
                   "File with the n x n cosine matrix (CSV); replaces --beta/--rho0");
}

void note_explicit_model_flags(const CLI::App& app, theory::ModelSource& source) {
    source.length_given = app.count("--L") > 0;
}

std::vector<std::string> explicit_flags(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->count() > 0) names.push_back(opt->get_name());
    }
    return names;
}

}  // namespace attngeo::cli
