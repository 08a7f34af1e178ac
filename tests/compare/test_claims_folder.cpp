// claims.csv of a compare run and of a simulation recounted from the folders' other files with
// plain loops (docs/design.md §7 "The paper's claims, each answered"): every answer's rule
// applied again to verdict.csv, kappa.json, corr_rho0.csv, regimes.csv, assumptions.csv and
// pr.csv, never to compare's own structures.
#include <gtest/gtest.h>

#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/csv.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("claims_folder");
}

attngeo::test_support::CliResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// A planted extract of 24 heads with noisy documents, and its compare run, made once.
struct ComparedFolder {
    fs::path extract, compare;
};

const ComparedFolder& compared() {
    static const ComparedFolder made = [] {
        ComparedFolder f{scratch() / "planted", scratch() / "compare"};
        fs::remove_all(f.extract);
        fs::remove_all(f.compare);
        const auto sim =
            run("simulate --d 16 --L 63 --T1 8 --T2 48 --eta 0.05 --omega 0.3 --heads 24 --docs 12 "
                "--alpha-noise 0.3 --norm-cv 0.05 --seed 5 --N pow2 --threads 2 --quiet "
                "--draw beta=0.02:0.3 --draw lambda=0.05:0.95 --draw rho0=-0.1:0.3 "
                "--draw p_sink=0.01:0.6 --as-extract " +
                f.extract.string());
        EXPECT_EQ(sim.exit_code, 0) << sim.err;
        const auto cmp = run("compare --emp " + f.extract.string() + " --out " +
                             f.compare.string() + " --replicates 100 --threads 2 --quiet");
        EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
        return f;
    }();
    return made;
}

using attngeo::CsvTable;
using attngeo::read_csv_table;

double optional(const CsvTable& t, std::size_t r, const std::string& column) {
    return t.text(r, column).empty() ? std::nan("") : t.number(r, column);
}

// claims.csv's row of (claim, variant).
std::size_t claim_row(const CsvTable& claims, const std::string& claim,
                      const std::string& variant) {
    for (std::size_t r = 0; r < claims.rows.size(); ++r)
        if (claims.text(r, "claim") == claim && claims.text(r, "variant") == variant) return r;
    ADD_FAILURE() << "no claims.csv row " << claim << " " << variant;
    return 0;
}

// C1 per variant from verdict.csv's states and kappa.json's information share.
std::string recount_c1(const CsvTable& verdict, const nlohmann::json& kappa,
                       const std::string& variant, double& share) {
    share = kappa.at("variants").at(variant).at("information_share").at("both").get<double>();
    bool failing = false, all_hold = true, informative_P = false, informative_R = false;
    for (std::size_t r = 0; r < verdict.rows.size(); ++r) {
        if (verdict.text(r, "variant") != variant) continue;
        const std::string state = verdict.text(r, "state");
        failing = failing || state == "falsified-every-kappa" || state == "kappa-free-falsified" ||
                  state == "contradicted-by-construction" || state == "falsified-at-given-kappa";
        all_hold = all_hold && (state == "holds" || state == "holds-uninformative");
        if (state == "holds")
            (verdict.text(r, "metric") == "P" ? informative_P : informative_R) = true;
    }
    if (failing) return "no";
    return all_hold && share >= 0.5 && informative_P && informative_R ? "yes" : "can't tell";
}

TEST(ClaimsFolder, CompareAnswersRecountFromTheFolder) {
    const ComparedFolder& f = compared();
    const CsvTable claims = read_csv_table((f.compare / "claims.csv").string());
    double largest = 0;
    // C1.
    const CsvTable verdict = read_csv_table((f.compare / "verdict.csv").string());
    std::ifstream kappa_file(f.compare / "kappa.json");
    const nlohmann::json kappa = nlohmann::json::parse(kappa_file);
    for (const char* variant : {"paper", "exact-mean", "scale-invariant", "corrected"}) {
        double share = 0;
        const std::string answer = recount_c1(verdict, kappa, variant, share);
        const std::size_t r = claim_row(claims, "C1", variant);
        EXPECT_EQ(claims.text(r, "answer"), answer) << variant;
        largest = std::max(largest, std::abs(claims.number(r, "value") - share));
    }
    // C2: the sign where the head-level interval excludes 0.
    const CsvTable corr = read_csv_table((f.compare / "corr_rho0.csv").string());
    int positive = 0, negative = 0, units = 0;
    double strongest = 0;
    for (std::size_t r = 0; r < corr.rows.size(); ++r) {
        const double c = optional(corr, r, "corr");
        if (std::isnan(c)) continue;
        units = static_cast<int>(corr.integer(r, "heads"));
        if (std::abs(c) > std::abs(strongest)) strongest = c;
        positive += optional(corr, r, "head_lo") > 0;
        negative += optional(corr, r, "head_hi") < 0;
    }
    const std::string c2 = units < 10                     ? "can't tell"
                           : positive > 0 && negative > 0 ? "can't tell"
                           : positive > 0                 ? "yes"
                                                          : "no";
    const std::size_t r2 = claim_row(claims, "C2", "");
    EXPECT_EQ(claims.text(r2, "answer"), c2);
    largest = std::max(largest, std::abs(claims.number(r2, "value") - strongest));
    // C3: stable heads per regime, by each rule.
    const CsvTable regimes = read_csv_table((f.compare / "regimes.csv").string());
    for (const auto& [variant, label, stability] :
         {std::tuple<std::string, std::string, std::string>{"magnitudes", "regime", "stability"},
          {"wording", "regime_wording", "stability_wording"}}) {
        std::map<std::string, int> stable;
        for (std::size_t r = 0; r < regimes.rows.size(); ++r)
            if (optional(regimes, r, stability) >= 0.8) ++stable[regimes.text(r, label)];
        int rarest = 1 << 30;
        for (const char* regime : {"Retriever", "Mixer", "Reset"})
            rarest = std::min(rarest, stable[regime]);
        const int heads = static_cast<int>(regimes.rows.size());
        const std::string c3 = rarest >= 5                  ? "yes"
                               : rarest == 0 && heads >= 30 ? "no"
                                                            : "can't tell";
        const std::size_t r = claim_row(claims, "C3", variant);
        EXPECT_EQ(claims.text(r, "answer"), c3) << variant;
        EXPECT_EQ(claims.number(r, "value"), rarest) << variant;
        for (std::size_t h = 0; h < regimes.rows.size(); ++h)
            EXPECT_EQ(regimes.integer(h, "rules_agree"),
                      regimes.text(h, "regime") == regimes.text(h, "regime_wording"));
    }
    // C4: the argmax of the head-mean F over 2 <= N < n from pr.csv, and the rule on the interval.
    const CsvTable pr = read_csv_table((f.extract / "pr.csv").string());
    const int n = 64;
    for (const auto& [variant, column] :
         {std::pair<std::string, std::string>{"F(r_max)", "Fmax_mean"},
          {"F(r_min)", "Fmin_mean"}}) {
        std::map<int, std::pair<double, int>> by_n;
        for (std::size_t r = 0; r < pr.rows.size(); ++r) {
            auto& cell = by_n[static_cast<int>(pr.integer(r, "N"))];
            cell.first += pr.number(r, column);
            ++cell.second;
        }
        int best = 0;
        double best_mean = -1;
        for (const auto& [N, cell] : by_n) {
            // F(r_max) >= 2x/(1 + x), x = N/n: the peak is of the share above that floor.
            const double x = double(N) / n;
            const double floor = variant == "F(r_max)" ? 2 * x / (1 + x) : 0;
            const double share = (cell.first / cell.second - floor) / (1 - floor);
            if (N >= 2 && N < n && share > best_mean + 1e-6) best = N, best_mean = share;
        }
        const std::size_t r = claim_row(claims, "C4", variant);
        EXPECT_EQ(claims.number(r, "value"), best) << variant;
        const double lo = optional(claims, r, "ci_lo"), hi = optional(claims, r, "ci_hi");
        EXPECT_TRUE(lo <= best && best <= hi) << variant << " [" << lo << ", " << hi << "]";
        const std::string c4 = hi <= 0.1 * n ? "yes" : lo > 0.1 * n ? "no" : "can't tell";
        EXPECT_EQ(claims.text(r, "answer"), c4) << variant;
    }
    // C5: shares of assumptions.csv with their Clopper–Pearson intervals.
    const CsvTable assumptions = read_csv_table((f.compare / "assumptions.csv").string());
    for (const auto& [name, value_states] :
         {std::pair<std::string, bool>{"A1", true}, {"A2", true}, {"A3", false}}) {
        int heads = 0, holding = 0;
        for (std::size_t r = 0; r < assumptions.rows.size(); ++r) {
            if (value_states && assumptions.integer(r, "counted") == 0) continue;
            ++heads;
            holding += static_cast<int>(assumptions.integer(r, name + "_holds"));
        }
        const double lo =
            holding == 0 ? 0 : boost::math::ibeta_inv(holding, heads - holding + 1, 0.025);
        const double hi =
            holding == heads ? 1 : boost::math::ibeta_inv(holding + 1, heads - holding, 0.975);
        const std::size_t r = claim_row(claims, "C5", name);
        EXPECT_EQ(claims.text(r, "answer"), lo > 0.5 ? "yes" : hi < 0.5 ? "no" : "can't tell");
        largest = std::max({largest, std::abs(claims.number(r, "value") - double(holding) / heads),
                            std::abs(claims.number(r, "ci_lo") - lo),
                            std::abs(claims.number(r, "ci_hi") - hi)});
    }
    std::cout << "claims.csv: " << claims.rows.size()
              << " rows recounted; largest numeric difference " << largest << "\n";
    EXPECT_LT(largest, 1e-12);
    EXPECT_EQ(claims.rows.size(), 4u + 1 + 2 + 2 + 3);
}

// The demo's C1 per variant, recounted from its verdict.csv and manifest.
TEST(ClaimsFolder, SimulateAnswersC1PerVariant) {
    const fs::path out = scratch() / "sim";
    fs::remove_all(out);
    const auto sim =
        run("simulate --d 32 --L 255 --T1 20 --T2 200 --trials 200 --N pow2 --quiet "
            "--out " +
            out.string());
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
    const CsvTable claims = read_csv_table((out / "claims.csv").string());
    const CsvTable verdict = read_csv_table((out / "verdict.csv").string());
    std::ifstream manifest_file(out / "manifest.json");
    const nlohmann::json manifest = nlohmann::json::parse(manifest_file);
    const nlohmann::json& envelopes = manifest.at("points").at(0).at("envelopes");
    ASSERT_EQ(claims.rows.size(), 4u);
    for (const char* variant : {"paper", "exact-mean", "scale-invariant", "corrected"}) {
        nlohmann::json kappa = {{"variants", {{variant, envelopes.at(variant)}}}};
        double share = 0;
        const std::string answer = recount_c1(verdict, kappa, variant, share);
        const std::size_t r = claim_row(claims, "C1", variant);
        EXPECT_EQ(claims.text(r, "answer"), answer) << variant;
        EXPECT_EQ(claims.number(r, "value"), share) << variant;
        std::cout << variant << ": " << answer << " (" << claims.text(r, "detail") << ")\n";
    }
}

}  // namespace
