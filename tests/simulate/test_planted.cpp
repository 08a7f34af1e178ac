// Planted heads (simulate/planted.hpp): seeded per-head draws within their ranges, the α model
// (sink exact, noisy shape renormalised), and a folder compare's reader accepts whose statistics
// equal the planted norms and whose claims' per-document arrays average to its tables; bad
// requests throw InputError and leave nothing behind.
#include "simulate/planted.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "compare/correlation.hpp"
#include "compare/extract_folder_reader.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace attngeo::simulate {
namespace {

PlantedRequest small_request(const std::string& out) {
    PlantedRequest r;
    r.base.profile.L = 63;
    r.base.profile.T1 = 10;
    r.base.profile.T2 = 50;
    r.base.profile.p_sink = 0.3;
    r.base.lambda = 0.2;
    r.d = 16;
    r.heads = 3;
    r.docs = 4;
    r.alpha_noise = 0.2;
    r.sizes = "pow2";
    r.threads = 1;
    r.out = out;
    return r;
}

TEST(PlantedDraws, SeededWithinRangesAndIndependentOfTheHeadCount) {
    PlantedRequest r = small_request("unused");
    r.draws = {parse_planted_range("beta=0.05:0.3"), parse_planted_range("T1=2:9"),
               parse_planted_range("p_sink=0.1:0.6")};
    const auto three = planted_head_parameters(r);
    r.heads = 5;
    const auto five = planted_head_parameters(r);
    for (int h = 0; h < 3; ++h) {
        EXPECT_EQ(three[h].beta, five[h].beta);
        EXPECT_EQ(three[h].profile.T1, five[h].profile.T1);
        EXPECT_EQ(three[h].profile.p_sink, five[h].profile.p_sink);
    }
    for (const auto& p : five) {
        EXPECT_GE(p.beta, 0.05);
        EXPECT_LE(p.beta, 0.3);
        EXPECT_GE(p.profile.T1, 2);
        EXPECT_LE(p.profile.T1, 9);
        EXPECT_EQ(p.lambda, 0.2);  // not drawn: the base value
    }
    EXPECT_NE(five[0].beta, five[1].beta);
    r.seed = 2;
    EXPECT_NE(planted_head_parameters(r)[0].beta, five[0].beta);
}

TEST(PlantedDraws, BadRangesAreNamedErrors) {
    using attngeo::test_support::expect_input_error;
    expect_input_error([] { parse_planted_range("gamma=1:2"); }, {"--draw", "gamma"});
    expect_input_error([] { parse_planted_range("L=10:20"); }, {"--draw", "unknown"});
    expect_input_error([] { parse_planted_range("beta=0.3:0.1"); }, {"--draw", "lo 0.3 > hi"});
    expect_input_error([] { parse_planted_range("beta=x:1"); }, {"--draw beta"});
    expect_input_error([] { parse_planted_range("beta"); }, {"name=lo:hi"});
    PlantedRequest r = small_request("unused");
    r.draws = {parse_planted_range("lambda=1.5:2")};  // Assumption 1 needs λ < 1
    expect_input_error([&] { planted_head_parameters(r); }, {"--draw: head 0", "lambda"});
}

TEST(PlantedAlpha, SinkExactShapeRenormalised) {
    theory::Assumption3Profile p;
    p.L = 63, p.T1 = 10, p.T2 = 50, p.p_sink = 0.25, p.eta = 0.05, p.omega = 0.3;
    simulate::RandomStream quiet(1, 0, 0);
    const auto clean = planted_alpha(p, 0, quiet);
    const Eigen::VectorXd expected = theory::assumption3_weights(p);
    double largest = 0;
    for (int i = 0; i <= p.L; ++i)
        largest = std::max(largest, std::abs(clean[i] - expected[i]) / expected[i]);
    std::cout << "sigma 0: largest relative difference to assumption3_weights " << largest << '\n';
    EXPECT_LT(largest, 1e-6);
    simulate::RandomStream noisy(1, 0, 0);
    const auto alpha = planted_alpha(p, 1.0, noisy);
    EXPECT_EQ(alpha[0], static_cast<float>(p.p_sink));
    EXPECT_NEAR(std::accumulate(alpha.begin(), alpha.end(), 0.0), 1.0, 1e-5);
    EXPECT_NE(alpha[5], clean[5]);
}

// The claims' per-document arrays of per_doc.safetensors (what simulate writes through
// HeadStatistics, as extract does) average over documents to heads.csv's magnitudes, pr.csv's F
// and diag.csv's cosines up to their float32 rounding.
void expect_claim_arrays_average_to_the_tables(const fs::path& out,
                                               const compare::EmpiricalRun& run) {
    const compare::PerDocArrays a = compare::read_per_doc((out / "per_doc.safetensors").string());
    const CsvTable diag = read_csv_table((out / "diag.csv").string());
    const int D = a.docs, H = a.heads, S = static_cast<int>(a.sizes.size());
    ASSERT_EQ(a.layers, 1);
    ASSERT_EQ(diag.rows.size(), static_cast<std::size_t>(H) * S);
    double largest = 0;
    auto check = [&](const std::vector<float>& values, int h, int s, int width, double table) {
        double mean = 0, magnitude = 0;
        for (int d = 0; d < D; ++d) {
            const double x = values[(static_cast<std::size_t>(d) * H + h) * width + s];
            mean += x / D;
            magnitude = std::max(magnitude, std::abs(x));
        }
        largest = std::max(largest, std::abs(mean - table));
        EXPECT_LE(std::abs(mean - table), 0x1p-24 * magnitude + 0x1p-40) << "head " << h;
    };
    for (int h = 0; h < H; ++h) {
        const compare::EmpiricalHead& head = run.at(0, h);
        check(a.m_sink, h, 0, 1, head.m_sink);
        check(a.m_last, h, 0, 1, head.m_last);
        check(a.m_rest, h, 0, 1, head.m_rest);
        for (int s = 0; s < S; ++s) {
            const std::size_t r = static_cast<std::size_t>(h) * S + s;
            check(a.Fmax, h, s, S, head.Fmax_mean[s]);
            check(a.Fmin, h, s, S, head.Fmin_mean[s]);
            check(a.cos_s_v0, h, s, S, diag.number(r, "cos_s_v0"));
            check(a.cos_s_vL, h, s, S, diag.number(r, "cos_s_vL"));
        }
    }
    std::cout << "planted claims' arrays: means against heads.csv, pr.csv, diag.csv, largest "
                 "difference "
              << largest << "\n";
}

TEST(PlantedFolder, ThroughTheExtractWriterIntoCompareReader) {
    const fs::path out = attngeo::test_support::scratch_folder("planted") / "folder";
    fs::remove_all(out);
    const PlantedRequest r = small_request(out.string());
    const nlohmann::json manifest = write_planted_extract(r);
    EXPECT_EQ(manifest.at("synthetic").at("kind"), "planted");
    for (const char* file :
         {"heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv",
          "per_doc.safetensors", "sums.safetensors", "manifest.json", "planted.csv"})
        EXPECT_TRUE(fs::exists(out / file)) << file;
    const compare::EmpiricalRun run = compare::read_empirical_run(out.string());
    EXPECT_EQ(run.layers, 1);
    EXPECT_EQ(run.heads, 3);
    EXPECT_EQ(run.context, 64);
    EXPECT_EQ(run.head_dim, 16);
    for (const auto& head : run.rows) {
        EXPECT_EQ(head.docs, 4);
        EXPECT_NEAR(head.lambda, 0.2, 1e-6);       // Assumption 1, no norm noise
        EXPECT_NEAR(head.norm_median, 1.0, 1e-6);  // C
        EXPECT_NEAR(head.sink_mass, 0.3, 1e-7);    // α_0 = p_sink in every document
    }
    expect_claim_arrays_average_to_the_tables(out, run);
    // The same request writes the same folder (statistics keyed by seed, head, document).
    const fs::path again = out.parent_path() / "again";
    fs::remove_all(again);
    PlantedRequest r2 = r;
    r2.out = again.string();
    r2.threads = 2;
    write_planted_extract(r2);
    for (const char* file : {"heads.csv", "pr.csv", "diag.csv", "cos_by_lag.csv", "by_position.csv",
                             "planted.csv", "per_doc.safetensors", "sums.safetensors"})
        EXPECT_EQ(attngeo::test_support::slurp(out / file),
                  attngeo::test_support::slurp(again / file))
            << file;
}

TEST(PlantedFolder, BadRequestWritesNothing) {
    const fs::path out = attngeo::test_support::scratch_folder("planted") / "bad";
    fs::remove_all(out);
    PlantedRequest r = small_request(out.string());
    r.base.rho0 = 0.99;  // infeasible for the exact sink at β = 0.05, L = 63
    attngeo::test_support::expect_input_error([&] { write_planted_extract(r); },
                                              {"--as-extract: head 0", "rho0"});
    EXPECT_FALSE(fs::exists(out));
    r.base.rho0 = 0;
    r.heads = 0;
    attngeo::test_support::expect_input_error([&] { write_planted_extract(r); }, {"--heads"});
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace attngeo::simulate
