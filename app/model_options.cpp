// Shared head-model flags; see model_options.hpp.
#include "app/model_options.hpp"

namespace attngeo::cli {

void add_model_options(CLI::App& app, theory::ModelSource& o) {
    app.add_option("--preset", o.preset, "Parameter preset; every model value below defaults to it")
        ->check(CLI::IsMember({"paper"}))
        ->capture_default_str();
    app.add_option("--profile", o.profile,
                   "Attention profile: assumption3 | uniform | zipf:s | file:PATH (one weight per "
                   "line, normalised)")
        ->capture_default_str();
    const theory::ParameterFields fields = theory::parameter_fields(o);
    for (const theory::ParameterDescriptor& p : theory::parameter_table()) {
        if (!theory::is_head_flag(p)) continue;
        CLI::Option* option = p.integer ? app.add_option(p.flag, *p.whole(fields), p.help)
                                        : app.add_option(p.flag, *p.real(fields), p.help);
        option->capture_default_str();
    }
    app.add_option("--alpha", o.alpha_file,
                   "File of n attention weights (one per line, sum 1); replaces the profile");
    app.add_option("--norms", o.norms_file,
                   "File of n value norms (one per line); replaces --C/--lambda");
    app.add_option("--cos", o.cos_file,
                   "File with the n x n cosine matrix (CSV); replaces --beta/--rho0");
}

void note_explicit_model_flags(const CLI::App& app, theory::ModelSource& source) {
    source.length_given = app.count(theory::parameter("L").flag) > 0;
}

theory::ModelParameters load_checked_model(const CLI::App& app, theory::ModelSource& source) {
    note_explicit_model_flags(app, source);
    theory::ModelParameters params = theory::load_model(source);
    theory::check_head_parameters(params, theory::flag_label);
    return params;
}

std::vector<std::string> explicit_flags(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->count() > 0) names.push_back(opt->get_name());
    }
    return names;
}

}  // namespace attngeo::cli
