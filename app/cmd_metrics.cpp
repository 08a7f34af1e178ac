// `attngeo metrics`: P(r_max,N), R(r_min,N) and F for the points of one head (docs/design.md §9).
#include <cmath>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/number_list.hpp"
#include "common/size_checks.hpp"
#include "theory/metrics.hpp"

namespace attngeo::cli {
namespace {

struct MetricsOptions {
    std::string input;
    std::string sizes = "all";
    std::string rank = "attn";
    std::string distance = "euclidean";
};

// points.csv: one row per token (row 0 = sink), columns alpha,v1..vd.
theory::TokenGeometry read_points(const std::string& path) {
    const NumericTable table = read_numeric_table(path, "--input points file");
    if (table.columns() < 2) {
        throw InputError("--input points file '" + path + "': rows have " +
                         std::to_string(table.columns()) +
                         " column(s), expected alpha,v1..vd with d >= 1");
    }
    const int n = static_cast<int>(table.rows.size());
    const int d = static_cast<int>(table.columns()) - 1;
    theory::TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, d);
    double total = 0;
    for (int i = 0; i < n; ++i) {
        const double alpha = table.rows[i][0];
        if (alpha < 0) {
            throw InputError(
                "--input points file '" + path + "' line " + std::to_string(table.line_numbers[i]) +
                ": alpha = " + format_double(alpha) + " is negative, expected alpha >= 0");
        }
        tokens.alpha[i] = alpha;
        total += alpha;
        for (int t = 0; t < d; ++t)
            tokens.values(i, t) = table.rows[i][t + 1];
    }
    if (std::abs(total - 1) > 1e-6) {
        throw InputError("--input points file '" + path + "': alpha sums to " +
                         format_double(total) + ", expected 1 within 1e-6");
    }
    if (!theory::unit_scale_exponent(tokens)) {
        const Eigen::ArrayXd magnitude = tokens.values.array().abs().reshaped();
        throw InputError("--input points file '" + path + "': values from |v| = " +
                         format_double((magnitude > 0).select(magnitude, HUGE_VAL).minCoeff()) +
                         " to " + format_double(magnitude.maxCoeff()) +
                         " span more than a double's exponent range; expected a largest/smallest "
                         "nonzero |v| ratio below about 2^2000");
    }
    return tokens;
}

void run(const MetricsOptions& o) {
    const theory::TokenGeometry tokens = read_points(o.input);
    const int n = static_cast<int>(tokens.alpha.size());
    const std::vector<int> sizes = parse_selection_sizes(o.sizes, n, "--N");
    const auto ranking = theory::parse_ranking(o.rank);
    const auto distance = theory::parse_distance(o.distance);
    // The Gram path holds an n × n matrix of doubles: checked before it is allocated.
    if (o.sizes == "all")
        check_allocation(checked_bytes(n, n), sizeof(double),
                         "--input '" + o.input + "': " + std::to_string(n) +
                             " tokens (an n x n Gram matrix; pass a short --N list for the "
                             "per-N path)");
    // All N: the Gram path; a short list: the per-N path. Both give identical rows, at any
    // scale of the values (selection_metrics_scaled).
    const auto rows =
        theory::selection_metrics_scaled(tokens, sizes, ranking, distance, o.sizes == "all");
    std::ostringstream out;
    // exact_decisions: comparisons decided below double resolution (docs/design.md §2;
    // metrics.hpp).
    out << "N,r_min,r_max,K_in,K_out,P_rmax,R_rmin,F_rmax,F_rmin,exact_decisions\n";
    for (const auto& m : rows) {
        out << m.N << ',' << format_double(m.r_min) << ',' << format_double(m.r_max) << ','
            << m.K_in << ',' << m.K_out << ',' << format_double(m.precision_at_rmax) << ','
            << format_double(m.recall_at_rmin) << ',' << format_double(m.f_at_rmax) << ','
            << format_double(m.f_at_rmin) << ',' << m.exact_decisions << '\n';
    }
    std::cout << out.str();
}

}  // namespace

Runner register_metrics(CLI::App& app) {
    auto o = std::make_shared<MetricsOptions>();
    app.add_option(
           "--input", o->input,
           "points.csv: one row per token (row 0 = sink): alpha,v1..vd; no header; # comments")
        ->required();
    app.add_option("--N", o->sizes, "Selection sizes: all | pow2 | list like 1,2,4 or 1:16")
        ->capture_default_str();
    app.add_option("--rank", o->rank, "Top-N ranking: attn (alpha_i) or contrib (alpha_i |v_i|)")
        ->check(CLI::IsMember(choice_list(theory::kRankingChoices)))
        ->capture_default_str();
    app.add_option("--distance", o->distance, "euclidean: |s - y|^2; cosine: 1 - cos(y, s)")
        ->check(CLI::IsMember(choice_list(theory::kDistanceChoices)))
        ->capture_default_str();
    app.footer(
        "Prints CSV N,r_min,r_max,K_in,K_out,P_rmax,R_rmin,F_rmax,F_rmin,exact_decisions (r_min = "
        "inf at N = n; exact_decisions: comparisons decided by exact arithmetic within 2^-44 of "
        "the token's scale, 0 for cosine).");
    return [o] { run(*o); };
}

}  // namespace attngeo::cli
