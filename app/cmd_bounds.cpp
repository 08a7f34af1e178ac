// `attngeo bounds`: the envelopes of Theorems 1–2 / Corollary 1 for a parametric or explicit
// head, one CSV row per N (docs/design.md §9), or their Table-1 sensitivities with --sensitivity.
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "app/model_options.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/number_list.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/size_checks.hpp"
#include "theory/bounds.hpp"

namespace attngeo::cli {
namespace {

struct BoundsOptions {
    theory::ModelSource source;
    double d = theory::paper_preset::d;
    double kappa = theory::paper_preset::kappa;
    std::string variant = "paper";
    std::string rank = "attn";
    std::string sizes = "all";
    bool sensitivity = false;
};

// The head holds n × n cosines (built, then copied into the head model: measured 16–20·n²
// bytes at the peak, counted as 24·n²) and the bound terms keep n values per size, so 30,000
// weights at every N would need about 29 GB: refused up front, naming where n came from.
void check_bounds_memory(const theory::ModelSource& source, int n, std::size_t size_count) {
    const std::string where = source.alpha_file.empty() ? "--L " + std::to_string(n - 1)
                                                        : "--alpha '" + source.alpha_file + "'";
    const std::uint64_t matrices = checked_bytes(checked_bytes(n, n), 3);
    const std::uint64_t terms = checked_bytes(n, size_count);
    check_allocation(matrices > UINT64_MAX - terms ? UINT64_MAX : matrices + terms, sizeof(double),
                     where + " (n = " + std::to_string(n) + " tokens: n x n cosines, " +
                         "24 n^2 bytes, and n values for each of " + std::to_string(size_count) +
                         " sizes; a shorter --N list needs fewer)");
}

void run(BoundsOptions& o, const CLI::App& app) {
    const theory::ModelParameters params = load_checked_model(app, o.source);
    theory::check_value(theory::parameter("d"), o.d, theory::flag_label);
    theory::check_value(theory::parameter("kappa"), o.kappa, theory::flag_label);
    const int n = theory::token_count(params);
    const std::vector<int> sizes = parse_selection_sizes(o.sizes, n, "--N");
    check_bounds_memory(o.source, n, sizes.size());
    const theory::HeadModel model = theory::build_head_model(params);
    theory::BoundSettings settings;
    settings.d = o.d;
    settings.kappa = o.kappa;
    settings.variant = theory::parse_bound_variant(o.variant);
    settings.ranking = theory::parse_ranking(o.rank);

    std::ostringstream out;
    if (o.sensitivity) {
        out << "N,parameter,P_lower,P_upper,R_lower,R_upper,Fmax_lower,Fmax_upper,Fmin_lower,Fmin_"
               "upper\n";
        for (const auto& r : theory::bound_sensitivities(params, sizes, settings)) {
            out << r.N << ',' << r.parameter;
            for (double v : {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
                             r.fmax_lower, r.fmax_upper, r.fmin_lower, r.fmin_upper}) {
                out << ',' << format_double(v);
            }
            out << '\n';
        }
        std::cout << out.str();
        return;
    }

    std::vector<std::string> regime(n + 1, "NA");
    if (const auto phases = theory::phase_parameters(params)) {
        const auto regimes = theory::regimes_by_size(model.alpha, phases->p_base, phases->eta);
        for (int N = 1; N <= n; ++N)
            regime[N] = theory::to_string(regimes[N - 1]);
    }
    out << schema::csv_header(schema::page::bounds, schema::file::bounds) << '\n';
    for (const auto& r : theory::bounds_all(model, sizes, settings)) {
        out << r.N << ',' << regime[r.N];
        for (double v :
             {r.delta, r.delta0, r.scale, r.precision_lower, r.precision_upper, r.recall_lower,
              r.recall_upper, r.fmax_lower, r.fmax_upper, r.fmin_lower, r.fmin_upper}) {
            out << ',' << format_double(v);
        }
        const theory::MarginFlags m = theory::margin_flags(r);
        const theory::EnvelopeFlags e = theory::envelope_flags(r.precision_lower, r.precision_upper,
                                                               r.recall_lower, r.recall_upper);
        for (bool flag :
             {m.delta_le0, m.delta0_le0, m.xi_le0, e.P_inverted, e.R_inverted, e.P_trivial_lower,
              e.R_trivial_lower, e.P_trivial_upper, e.R_trivial_upper})
            out << ',' << int(flag);
        out << '\n';
    }
    std::cout << out.str();
}

}  // namespace

Runner register_bounds(CLI::App& app) {
    auto o = std::make_shared<BoundsOptions>();
    add_model_options(app, o->source);
    add_table_option(app, "d", o->d)->capture_default_str();
    add_table_option(app, "kappa", o->kappa)->capture_default_str();
    app.add_option("--variant", o->variant, "Bound variant")
        ->check(CLI::IsMember(theory::bound_variant_names()))
        ->capture_default_str();
    app.add_option("--rank", o->rank, "Top-N ranking: attn (alpha_i) or contrib (alpha_i |v_i|)")
        ->check(CLI::IsMember(choice_list(theory::kRankingChoices)))
        ->capture_default_str();
    app.add_option("--N", o->sizes, "Selection sizes: all | pow2 | list like 1,2,4 or 1:16")
        ->capture_default_str();
    app.add_flag(
        "--sensitivity", o->sensitivity,
        "Print d(bound)/d(log parameter) per N and parameter instead (Table 1; d/d rho0 for rho0)");
    app.footer(
        "Prints CSV " + schema::csv_header(schema::page::bounds, schema::file::bounds) +
        ".\nregime is the Table-2 regime (I-V) for "
        "assumption3 profiles, NA otherwise. The 0/1 flags (docs/design.md section 7):\n"
        "Delta <= 0 (t = 1 for any kappa), Delta0 <= 0 with the sink selected, xi <= 0 on the\n"
        "upper bounds' deciding pair (p- = 1/2 for any kappa), lower > upper, lower <= 0.01,\n"
        "upper >= 0.99.\n"
        "Delta is nan when I_N minus the sink is empty (N = 1 with the sink on top: all bounds "
        "1).\n"
        "Decisions (docs/design.md section 3): union factors use n - N; Delta0 uses rho_out;\n"
        "t(x) = exp(-kappa d (max(x,0)/B)^2); the Delta0 term is dropped when the sink is not\n"
        "selected; p-(0) = 1/2.");
    CLI::App* self = &app;
    return [o, self] { run(*o, *self); };
}

}  // namespace attngeo::cli
