// The parameter table (theory/parameter_table): its ranges against the theory functions'
// own checks, its fields against the structs they set, its Table-1 order, and
// docs/parameters.md against the table (regenerate with ATTNGEO_WRITE_DOCS=1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "theory/bounds.hpp"
#include "theory/model_source.hpp"
#include "theory/parameter_table.hpp"
#include "theory/parametric.hpp"

using namespace attngeo::theory;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Whether the theory functions accept `value` for `key` on the paper preset head (bounds at
// N = 1 for d and kappa): the plain reference the table's ranges must agree with.
bool theory_accepts(const std::string& key, double value) {
    ModelParameters p;
    if (key == "zipf_s") p.profile_kind.kind = ProfileSpec::Kind::zipf;
    BoundSettings s;
    ParameterFields f = parameter_fields(p);
    f.d = &s.d;
    f.kappa = &s.kappa;
    set_value(parameter(key), f, value);
    try {
        bounds_all(build_head_model(p), {1}, s);
        return true;
    } catch (const std::domain_error&) {
        return false;
    }
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST(ParameterTable, RangesAgreeWithTheTheoryChecks) {
    // Each key at values inside, on and beyond its ends; the table and the theory functions
    // must say the same (T1 and T2 stay ordered on the preset's L, so their ends are 0 and L).
    const std::vector<std::pair<std::string, std::vector<double>>> probes = {
        {"L", {0, 801, 2000}},
        {"p_sink", {-0.1, 0, 0.3, 1, 1.5}},
        {"T1", {-1, 0, 50, 800}},
        {"T2", {100, 500, 1024}},
        {"eta", {-0.1, 0, 0.5}},
        {"omega", {-3, 0, 7}},
        {"C", {-1, 0, 1e-3, 5}},
        {"lambda", {-0.2, 0, 0.5, 1, 1.2}},
        {"beta", {-1, 0, 1e-3, 2}},
        {"rho0", {-1.5, -1, 0, 0.05, 1.5}},
        {"d", {0, 0.5, 1, 64, kInf}},
        {"kappa", {-1, 0, 0.5, kInf}},
        {"zipf_s", {-0.5, 0, 1.2, kInf}},
    };
    int disagreements = 0;
    for (const auto& [key, values] : probes) {
        for (double v : values) {
            const bool table = in_range(parameter(key), v);
            const bool theory = theory_accepts(key, v);
            if (table != theory) ++disagreements;
            EXPECT_EQ(table, theory)
                << key << " = " << v << " (table range " << range_text(parameter(key)) << ")";
        }
    }
    std::cout << "table and theory disagree on " << disagreements << " probes\n";
}

TEST(ParameterTable, FieldsReachTheStructsTheyName) {
    ModelParameters p;
    ParameterFields f = parameter_fields(p);
    double d = 0, kappa = 0, norm_cv = 0;
    f.d = &d;
    f.kappa = &kappa;
    f.norm_cv = &norm_cv;
    double value = 2;
    for (const ParameterDescriptor& entry : parameter_table())
        set_value(entry, f, value++);
    EXPECT_EQ(p.profile.L, 2);
    EXPECT_EQ(p.profile.p_sink, 3);
    EXPECT_EQ(p.profile.T1, 4);
    EXPECT_EQ(p.profile.T2, 5);
    EXPECT_EQ(p.profile.eta, 6);
    EXPECT_EQ(p.profile.omega, 7);
    EXPECT_EQ(p.C, 8);
    EXPECT_EQ(p.lambda, 9);
    EXPECT_EQ(p.beta, 10);
    EXPECT_EQ(p.rho0, 11);
    EXPECT_EQ(d, 12);
    EXPECT_EQ(kappa, 13);
    EXPECT_EQ(p.profile_kind.zipf_exponent, 14);
    EXPECT_EQ(norm_cv, 15);
    ModelSource source;
    EXPECT_THROW(get_value(parameter("zipf_s"), parameter_fields(source)), std::logic_error);
}

TEST(ParameterTable, DefaultsAreThePaperPresetOfTheStructs) {
    const ModelSource source;
    const BoundSettings settings;
    ModelSource copy = source;
    const ParameterFields f = parameter_fields(copy);
    for (const ParameterDescriptor& entry : parameter_table()) {
        if (is_head_flag(entry)) {
            EXPECT_EQ(get_value(entry, f), entry.default_value) << entry.key;
        }
    }
    EXPECT_EQ(parameter("d").default_value, settings.d);
    EXPECT_EQ(parameter("kappa").default_value, settings.kappa);
    EXPECT_EQ(parameter("d").default_value, 128);
    EXPECT_EQ(parameter("lambda").default_value, 0.1);
}

TEST(ParameterTable, MessagesNameTheLabelAndTheRange) {
    const auto message = [](const std::string& key, double value) {
        try {
            check_value(parameter(key), value, flag_label);
        } catch (const attngeo::InputError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(message("p_sink", 0), "--p-sink 0: expected 0 < p_sink < 1");
    EXPECT_EQ(message("L", 0), "--L 0: expected an integer L >= 1");
    EXPECT_EQ(message("L", 2.5), "--L 2.5: expected an integer L >= 1");
    EXPECT_EQ(message("rho0", 2), "--rho0 2: expected -1 <= rho0 <= 1");
    EXPECT_EQ(message("omega", kInf), "--omega inf: expected a finite omega");
    EXPECT_EQ(message("d", -1), "--d -1: expected d >= 1 or inf");
    EXPECT_EQ(message("d", kInf), "accepted");
    ModelParameters p;
    p.profile.T1 = 900;
    try {
        check_head_parameters(p, key_label);
        ADD_FAILURE() << "T1 > T2 accepted";
    } catch (const attngeo::InputError& e) {
        EXPECT_STREQ(e.what(), "T1 = 900, T2 = 800, L = 1024: expected 0 <= T1 <= T2 <= L");
    }
}

TEST(ParameterTable, DocsListEveryParameter) {
    const std::string path = std::string(ATTNGEO_SOURCE_DIR) + "/docs/parameters.md";
    const std::string expected = parameter_table_markdown();
    if (std::getenv("ATTNGEO_WRITE_DOCS") != nullptr) std::ofstream(path) << expected;
    EXPECT_EQ(read_text(path), expected)
        << path << " differs from theory/parameter_table; regenerate it with "
        << "ATTNGEO_WRITE_DOCS=1 test_theory --gtest_filter=ParameterTable.DocsListEveryParameter";
}
