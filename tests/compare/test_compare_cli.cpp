// Tests of the extract-folder reader and of `attngeo compare` end to end, on a small synthetic
// extract folder written here (no libtorch): every head has a known exponential cosine decay
// and a known Assumption-3 profile, so fits.csv and profile.csv must give them back; broken
// folders must exit 2 with one line naming the file and write nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/extract_folder_reader.hpp"
#include "compare/length_summary.hpp"
#include "tests/support/sensitivity_reference.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"
#include "theory/assumption_models.hpp"
#include "theory/parametric.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

constexpr int kLayers = 2, kHeads = 2, kContext = 64, kDocs = 3, kHeadDim = 4;
const std::vector<int> kSizes = {1, 2, 4, 8, 16, 32, 64};
const char* const kRegimeOf[] = {"Retriever", "Mixer", "Reset", "Mixer"};

// The known parameters of head i = layer · kHeads + head.
double beta_of(int i) {
    return 0.05 * (1 << i);
}
double rho0_of(int i) {
    return 0.05 * i - 0.05;
}
theory::Assumption3Profile profile_of(int i) {
    theory::Assumption3Profile p;
    p.L = kContext - 1;
    p.p_sink = 0.1 + 0.1 * i;
    p.T1 = 8 + 2 * i;
    p.T2 = 50 - i;
    p.eta = 0.1 + 0.02 * i;
    p.omega = 0.3 + 0.05 * i;
    return p;
}

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("compare");
}

void put(const fs::path& path, const std::string& content) {
    std::ofstream(path) << content;
}

HostTensor tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape,
                  std::shared_ptr<void> data, std::size_t bytes) {
    const void* at = data.get();
    return tensor_view(name, dtype, std::move(shape), at, bytes, std::move(data));
}

// A complete extract folder: manifest.json, heads.csv, pr.csv, by_position.csv,
// cos_by_lag.csv and per_doc.safetensors, with the known parameters above; `group` query heads
// share each key/value head (GQA when 2), `docs` documents (standard errors empty below 2).
// per_doc.safetensors holds cos_by_lag, alpha and C (what extract keeps for the fit
// intervals) and the claims' m_sink, m_last, m_rest, Fmax, Fmin, cos_s_v0, cos_s_vL, spread
// around the known parameters symmetrically over documents so their means are the parameters;
// without `fit_arrays` it lacks them (a malformed folder).
fs::path make_extract_folder(const std::string& name, int group = 1, int docs = kDocs,
                             bool fit_arrays = true) {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const nlohmann::json manifest = {
        {"format_version", schema::kFormatVersion},
        {"kind", "extract"},
        {"model",
         {{"layers", kLayers},
          {"heads", kHeads},
          {"kv_heads", kHeads / group},
          {"head_dim", kHeadDim},
          {"family", "synthetic"}}},
        {"parameters", {{"context", kContext}, {"max_lag", kContext - 2}, {"N", "list"}}}};
    put(dir / "manifest.json", manifest.dump(2));
    std::ostringstream heads, pr, pos, lags;
    heads << "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,lambda,rho0,"
             "sink_mass,last_mass,m_sink,m_last,m_rest,regime,regime_margin\n";
    pr << "layer,head,N,docs,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean\n";
    pos << "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    lags << "layer,head,lag,cos_mean,pairs\n";
    for (int l = 0; l < kLayers; ++l) {
        for (int h = 0; h < kHeads; ++h) {
            const int i = l * kHeads + h;
            const Eigen::VectorXd alpha = theory::assumption3_weights(profile_of(i));
            heads << l << ',' << h << ',' << h / group << ',' << docs << ",0.98,1,0.01,0.2,0.5,"
                  << format_double(rho0_of(i)) << ',' << format_double(alpha[0]) << ','
                  << format_double(alpha[kContext - 1]) << ",0.1,0.2,0.3," << kRegimeOf[i] << ','
                  << format_double(1.25 + i) << '\n';
            for (std::size_t s = 0; s < kSizes.size(); ++s)
                pr << l << ',' << h << ',' << kSizes[s] << ',' << docs << ','
                   << format_double(0.9 - 0.1 * s) << (docs > 1 ? ",0.01," : ",,")
                   << format_double(0.3 + 0.1 * s) << (docs > 1 ? ",0.01," : ",,") << "0.5,0.5\n";
            for (int p = 0; p < kContext; ++p)
                pos << l << ',' << h << ',' << p << ',' << (p == 0 ? "0.5" : "1") << ','
                    << format_double(alpha[p]) << ','
                    << format_double(alpha[p] * (p == 0 ? 0.5 : 1)) << '\n';
            for (int k = 1; k <= kContext - 2; ++k)
                lags << l << ',' << h << ',' << k << ',' << format_double(std::exp(-beta_of(i) * k))
                     << ',' << docs * (kContext - 1 - k) << '\n';
        }
    }
    put(dir / "heads.csv", heads.str());
    put(dir / "pr.csv", pr.str());
    put(dir / "by_position.csv", pos.str());
    put(dir / "cos_by_lag.csv", lags.str());

    const std::int64_t S = kSizes.size(), cells = docs * kLayers * kHeads;
    auto P = std::shared_ptr<float[]>(new float[cells * S]);
    auto R = std::shared_ptr<float[]>(new float[cells * S]);
    auto rho0 = std::shared_ptr<float[]>(new float[cells]);
    auto lambda = std::shared_ptr<float[]>(new float[cells]);
    auto sizes = std::shared_ptr<std::int64_t[]>(new std::int64_t[S]);
    for (std::int64_t c = 0; c < cells; ++c) {
        const int head = static_cast<int>(c % (kLayers * kHeads)), doc = static_cast<int>(c / 4);
        // A GQA group's query heads share their value states, hence ρ0.
        const int value_head = head - head % group;
        rho0[c] = static_cast<float>(rho0_of(value_head) + 0.01 * doc);
        lambda[c] = 0.5f;
        for (std::int64_t s = 0; s < S; ++s) {
            P[c * S + s] = static_cast<float>(0.9 - 0.1 * s);
            R[c * S + s] = static_cast<float>(0.3 + 0.1 * s + 0.02 * head + 0.01 * doc);
        }
    }
    for (std::int64_t s = 0; s < S; ++s)
        sizes[s] = kSizes[s];
    const std::vector<std::int64_t> dlhs = {docs, kLayers, kHeads, S},
                                    dlh = {docs, kLayers, kHeads};
    std::vector<HostTensor> tensors = {tensor("P", DType::F32, dlhs, P, cells * S * 4),
                                       tensor("R", DType::F32, dlhs, R, cells * S * 4),
                                       tensor("rho0", DType::F32, dlh, rho0, cells * 4),
                                       tensor("lambda", DType::F32, dlh, lambda, cells * 4),
                                       tensor("N", DType::I64, {S}, sizes, S * 8)};
    if (fit_arrays) {
        const std::int64_t K = kContext - 2, n = kContext;
        auto cos = std::shared_ptr<float[]>(new float[cells * K]);
        auto alpha = std::shared_ptr<float[]>(new float[cells * n]);
        auto C = std::shared_ptr<float[]>(new float[cells]);
        for (std::int64_t c = 0; c < cells; ++c) {
            const int head = static_cast<int>(c % (kLayers * kHeads)),
                      doc = static_cast<int>(c / 4);
            const double spread = doc - 0.5 * (docs - 1);  // sums to 0 over documents
            const int value_head = head - head % group;
            C[c] = static_cast<float>(1 + 0.01 * spread);
            for (std::int64_t k = 1; k <= K; ++k)
                cos[c * K + k - 1] = static_cast<float>(std::exp(-beta_of(value_head) * k) +
                                                        0.01 * spread * std::sin(0.7 * k));
            const Eigen::VectorXd w = theory::assumption3_weights(profile_of(head));
            double total = 0;
            for (std::int64_t p = 0; p < n; ++p)
                total += w[p] * (1 + 0.02 * spread * (p > 0 ? std::sin(1.3 * p) : 0.0));
            for (std::int64_t p = 0; p < n; ++p)
                alpha[c * n + p] = static_cast<float>(
                    w[p] * (1 + 0.02 * spread * (p > 0 ? std::sin(1.3 * p) : 0.0)) / total);
        }
        tensors.push_back(
            tensor("cos_by_lag", DType::F32, {docs, kLayers, kHeads, K}, cos, cells * K * 4));
        tensors.push_back(
            tensor("alpha", DType::F32, {docs, kLayers, kHeads, n}, alpha, cells * n * 4));
        tensors.push_back(tensor("C", DType::F32, dlh, C, cells * 4));
        // The claims' arrays, spread the same way around heads.csv's magnitudes and pr.csv's F.
        auto spread_around = [&](const char* name, double centre,
                                 const std::vector<std::int64_t>& shape) {
            const std::int64_t inner = shape.size() == 4 ? shape[3] : 1;
            auto data = std::shared_ptr<float[]>(new float[cells * inner]);
            for (std::int64_t c = 0; c < cells; ++c)
                for (std::int64_t k = 0; k < inner; ++k)
                    data[c * inner + k] =
                        static_cast<float>(centre + 0.01 * (c / 4 - 0.5 * (docs - 1)));
            tensors.push_back(tensor(name, DType::F32, shape, data, cells * inner * 4));
        };
        spread_around("m_sink", 0.1, dlh);
        spread_around("m_last", 0.2, dlh);
        spread_around("m_rest", 0.3, dlh);
        spread_around("Fmax", 0.5, dlhs);
        spread_around("Fmin", 0.5, dlhs);
        spread_around("cos_s_v0", 0.4, dlhs);
        spread_around("cos_s_vL", 0.6, dlhs);
    }
    write_safetensors((dir / "per_doc.safetensors").string(), tensors);
    return dir;
}

// Replaces the first line starting with `match` with `replacement`.
void edit_line(const fs::path& path, const std::string& match, const std::string& replacement) {
    std::istringstream in(slurp(path));
    std::ostringstream out;
    std::string line;
    bool done = false;
    while (std::getline(in, line)) {
        if (!done && line.rfind(match, 0) == 0) {
            line = replacement;
            done = true;
        }
        out << line << '\n';
    }
    ASSERT_TRUE(done) << match;
    put(path, out.str());
}

// Removes column `name` from the header and every row of a CSV.
std::vector<std::string> split_fields(const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ','))
        fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.push_back("");  // getline drops it
    return fields;
}

void drop_column(const fs::path& path, const std::string& name) {
    std::istringstream in(slurp(path));
    std::ostringstream out;
    std::string line;
    int column = -1;
    while (std::getline(in, line)) {
        std::vector<std::string> fields = split_fields(line);
        if (column < 0)
            column =
                static_cast<int>(std::find(fields.begin(), fields.end(), name) - fields.begin());
        fields.erase(fields.begin() + column);
        for (std::size_t k = 0; k < fields.size(); ++k)
            out << (k ? "," : "") << fields[k];
        out << '\n';
    }
    put(path, out.str());
}

// read_empirical_run(dir) must fail with one InputError line holding every phrase.
void expect_reader_error(const fs::path& dir, const std::vector<std::string>& phrases) {
    attngeo::test_support::expect_input_error([&] { read_empirical_run(dir.string()); }, phrases);
}

// A header-addressed CSV: rows of name → field.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
    std::istringstream in(slurp(path));
    std::string line;
    std::vector<std::string> header;
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        const std::vector<std::string> fields = split_fields(line);
        if (header.empty()) {
            header = fields;
            continue;
        }
        std::map<std::string, std::string> row;
        for (std::size_t k = 0; k < header.size() && k < fields.size(); ++k)
            row[header[k]] = fields[k];
        rows.push_back(row);
    }
    return rows;
}

std::string first_line(const fs::path& path) {
    std::istringstream in(slurp(path));
    std::string line;
    std::getline(in, line);
    return line;
}

using RunResult = attngeo::test_support::CliResult;

RunResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

TEST(EmpiricalRunReader, ReadsTheSyntheticFolder) {
    const auto dir = make_extract_folder("reader_good");
    const EmpiricalRun run = read_empirical_run(dir.string());
    EXPECT_EQ(run.layers, kLayers);
    EXPECT_EQ(run.heads, kHeads);
    EXPECT_EQ(run.head_dim, kHeadDim);
    EXPECT_EQ(run.context, kContext);
    EXPECT_EQ(run.max_lag, kContext - 2);
    EXPECT_EQ(run.sizes, kSizes);
    const EmpiricalHead& h = run.at(1, 0);
    EXPECT_EQ(h.regime, attngeo::theory::HeadRegime::reset);
    EXPECT_DOUBLE_EQ(h.rho0, rho0_of(2));
    EXPECT_DOUBLE_EQ(h.cos_by_lag[4], std::exp(-beta_of(2) * 5));
    EXPECT_EQ(h.pairs_by_lag[0], kDocs * (kContext - 2));
    EXPECT_DOUBLE_EQ(h.alpha_by_position[0], profile_of(2).p_sink);
    EXPECT_DOUBLE_EQ(h.R_mean[2], 0.3 + 0.1 * 2);
}

TEST(EmpiricalRunReader, BadFoldersNameTheFileAndWhatWasExpected) {
    {
        const auto dir = make_extract_folder("missing_column");
        drop_column(dir / "heads.csv", "rho0");
        expect_reader_error(dir, {"heads.csv", "missing column 'rho0'"});
    }
    {
        const auto dir = make_extract_folder("ragged");
        edit_line(dir / "by_position.csv", "1,1,7,", "1,1,7,1,0.01");
        expect_reader_error(dir, {"by_position.csv' line", "ragged"});
    }
    {
        const auto dir = make_extract_folder("not_a_number");
        edit_line(dir / "cos_by_lag.csv", "0,1,3,", "0,1,3,abc,100");
        expect_reader_error(dir, {"cos_by_lag.csv' line", "'cos_mean'"});
    }
    {
        const auto dir = make_extract_folder("nan_cell");
        edit_line(dir / "pr.csv", "0,0,4,", "0,0,4,3,nan,0,0.5,0,0.5,0.5");
        expect_reader_error(dir, {"pr.csv' line", "'P_mean'"});
    }
    {
        const auto dir = make_extract_folder("missing_position");
        edit_line(dir / "by_position.csv", "0,1,9,", "0,1,8,1,0.01,0.01");  // 8 twice, no 9
        expect_reader_error(dir, {"by_position.csv", "position 8 appears twice"});
    }
    {
        const auto dir = make_extract_folder("missing_head");
        edit_line(dir / "heads.csv", "1,1,", "");
        expect_reader_error(dir, {"heads.csv': no row for layer 1 head 1"});
    }
    {
        const auto dir = make_extract_folder("wrong_kind");
        put(dir / "manifest.json", R"({"format_version": 4, "kind": "simulate"})");
        expect_reader_error(dir, {"manifest.json", "expected \"extract\""});
    }
    {
        const auto dir = make_extract_folder("missing_file");
        fs::remove(dir / "pr.csv");
        expect_reader_error(dir, {"pr.csv': cannot open"});
    }
    expect_reader_error(scratch() / "no_such_folder", {"not a folder"});
}

// Fuzz finding (fuzz_extract_folder): manifest.json holding a number beyond double
// ("777.7E993") escaped as nlohmann's out_of_range; now an InputError naming the manifest.
TEST(EmpiricalRunReader, ManifestNumberBeyondDoubleNamesTheManifest) {
    const auto dir = make_extract_folder("reader_huge_number");
    put(dir / "manifest.json", "777.7E993~=\xbd\x03");
    expect_reader_error(dir, {"manifest.json", "not valid JSON"});
    put(dir / "manifest.json",
        R"({"format_version": 4, "kind": "extract", "model": {"layers": 1e400}})");
    expect_reader_error(dir, {"manifest.json", "not valid JSON"});
}

// The headers of the contract (docs/commands/compare.md).
void expect_contract_headers(const fs::path& out) {
    const std::map<std::string, std::string> headers = {
        {"fits.csv",
         "layer,head,beta,mae,beta_offset,c_inf,mae_offset,lambda,C,cv_positional,cv_pooled,rho0,"
         "kv_head,counted,beta_at_bound,beta_offset_at_bound,beta_lo,beta_hi,beta_offset_lo,"
         "beta_offset_hi,c_inf_lo,c_inf_hi,lambda_lo,lambda_hi,C_lo,C_hi,rho0_lo,rho0_hi,"
         "unidentified"},
        {"profile.csv",
         "layer,head,p_sink,p_base,eta,omega,T1,T2,r2_log,rmse_log,eta_at_bound,omega_at_bound,"
         "p_sink_at_bound,at_bound,fit_failed,p_sink_lo,p_sink_hi,p_base_lo,p_base_hi,eta_lo,"
         "eta_hi,omega_lo,omega_hi,T1_lo,T1_hi,T2_lo,T2_hi,unidentified"},
        {"profile_global.csv",
         "p_sink,p_base,eta,omega,T1,T2,r2_log,rmse_log,eta_at_bound,omega_at_bound,"
         "p_sink_at_bound,at_bound,p_sink_lo,p_sink_hi,p_base_lo,p_base_hi,eta_lo,eta_hi,"
         "omega_lo,omega_hi,T1_lo,T1_hi,T2_lo,T2_hi,unidentified"},
        {"assumptions.csv",
         "layer,head,kv_head,counted,lambda,cv_positional,cv_pooled,compressed_sink,"
         "stable_norms,A1_holds,beta,mae_exp,mae_constant,mae_zero,negative_cos_share,"
         "beta_uninformative,A2_holds,p_sink,p_base,r2_log,sink_mass,sink_exists,"
         "profile_r2_ok,profile_identified,A3_holds"},
        {"bounds.csv",
         "layer,head,N,variant,kappa,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper,P_inside,"
         "R_inside"},
        {"envelope.csv", "variant,N,heads,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper"},
        {"agreement.csv", "variant,scope,layer,points,inside,fraction,worst_excess"},
        {"violations.csv", "variant,layer,head,N,metric,value,lower,upper,excess"},
        {"corr_rho0.csv",
         "N,heads,corr,ci_lo,ci_hi,replicates,head_lo,head_hi,partial_layer,partial_lo,"
         "partial_hi"},
        {"regimes.csv",
         "layer,head,regime,regime_margin,m_sink,m_last,m_rest,sink_mass,last_mass,"
         "regime_wording,rules_agree,stability,stability_wording"},
        {"claims.csv",
         "claim,statement,variant,answer,quantity,value,ci_lo,ci_hi,units,rule,"
         "detail"},
        {"regime_counts.csv", "layer,Retriever,Mixer,Reset"},
        {"pr_by_regime.csv", "regime,N,heads,P_mean,R_mean"},
        {"contrib_by_regime.csv", "regime,pos,heads,alpha_mean,contrib_mean"}};
    // bounds.csv goes on with the degeneracy and κ* columns of compare/envelopes, whose own
    // tests check them; here its leading columns.
    for (const auto& [file, header] : headers)
        if (std::string(file) == "bounds.csv")
            EXPECT_EQ(first_line(out / file).substr(0, header.size()), header) << file;
        else
            EXPECT_EQ(first_line(out / file), header) << file;
}

TEST(CompareCli, RecoversTheKnownParametersAndWritesTheContract) {
    const auto dir = make_extract_folder("cli_good");
    const fs::path out = scratch() / "cli_good_out";
    fs::remove_all(out);
    const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string() +
                            " --replicates 50 --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;

    expect_contract_headers(out);
    for (const char* file : {"kappa.json", "fitted_params.json", "manifest.json"})
        EXPECT_TRUE(fs::is_regular_file(out / file)) << file;

    double worst_beta = 0, worst_eta = 0;
    const auto fits = read_csv(out / "fits.csv");
    ASSERT_EQ(fits.size(), 4u);
    for (const auto& row : fits) {
        const int i = std::stoi(row.at("layer")) * kHeads + std::stoi(row.at("head"));
        const double beta = std::stod(row.at("beta"));
        worst_beta = std::max(worst_beta, std::abs(beta - beta_of(i)) / beta_of(i));
        EXPECT_NEAR(beta, beta_of(i), 1e-6 * beta_of(i)) << i;
        EXPECT_LT(std::stod(row.at("mae")), 1e-8) << i;
        EXPECT_NEAR(std::stod(row.at("beta_offset")), beta_of(i), 1e-5 * beta_of(i)) << i;
        EXPECT_NEAR(std::stod(row.at("c_inf")), 0, 1e-6) << i;
        EXPECT_DOUBLE_EQ(std::stod(row.at("rho0")), rho0_of(i));
        EXPECT_DOUBLE_EQ(std::stod(row.at("lambda")), 0.5);
        EXPECT_DOUBLE_EQ(std::stod(row.at("C")), 1.0);
        EXPECT_EQ(row.at("beta_at_bound"), "0") << i;  // planted β inside [1e-6, 50]
        EXPECT_EQ(row.at("beta_offset_at_bound"), "0") << i;
    }
    const auto profiles = read_csv(out / "profile.csv");
    ASSERT_EQ(profiles.size(), 4u);  // heads only; the global fit is profile_global.csv
    EXPECT_EQ(read_csv(out / "profile_global.csv").size(), 1u);
    for (std::size_t k = 0; k < 4; ++k) {
        const auto& row = profiles[k];
        const int i = std::stoi(row.at("layer")) * kHeads + std::stoi(row.at("head"));
        const auto truth = profile_of(i);
        EXPECT_NEAR(std::stod(row.at("p_sink")), truth.p_sink, 1e-12) << i;
        EXPECT_NEAR(std::stoi(row.at("T1")), truth.T1, 2) << i;
        EXPECT_NEAR(std::stoi(row.at("T2")), truth.T2, 1) << i;
        EXPECT_NEAR(std::stod(row.at("eta")), truth.eta, 1e-3 * truth.eta) << i;
        EXPECT_NEAR(std::stod(row.at("omega")), truth.omega, 1e-3 * truth.omega) << i;
        EXPECT_GT(std::stod(row.at("r2_log")), 0.9999) << i;
        EXPECT_EQ(row.at("at_bound"), "0") << i;  // planted η < 0.999, 0 < ω < π, p_sink > 0
        worst_eta = std::max(worst_eta, std::abs(std::stod(row.at("eta")) - truth.eta) / truth.eta);
    }
    std::cout << "largest relative beta error: " << worst_beta
              << ", largest relative eta error: " << worst_eta << "\n";

    const auto counts = read_csv(out / "regime_counts.csv");
    ASSERT_EQ(counts.size(), 2u);
    EXPECT_EQ(counts[0].at("Retriever"), "1");
    EXPECT_EQ(counts[0].at("Mixer"), "1");
    EXPECT_EQ(counts[1].at("Reset"), "1");
    EXPECT_EQ(counts[1].at("Mixer"), "1");
    const auto by_regime = read_csv(out / "pr_by_regime.csv");
    ASSERT_EQ(by_regime.size(), 3 * kSizes.size());
    for (const auto& row : by_regime)
        if (row.at("regime") == "Mixer") {
            EXPECT_EQ(row.at("heads"), "2");
        }

    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest.at("kind"), "compare");
    EXPECT_EQ(manifest.at("emp"), fs::absolute(dir).lexically_normal().string());
    EXPECT_TRUE(manifest.at("sim").is_null());
    EXPECT_FALSE(manifest.at("decisions").empty());

    // The simulate command of fitted_params.json runs as printed (with a short budget).
    const auto params = nlohmann::json::parse(slurp(out / "fitted_params.json"));
    EXPECT_EQ(params.at("L"), kContext - 1);
    EXPECT_EQ(params.at("d"), kHeadDim);
    std::string command = params.at("simulate_command");
    ASSERT_EQ(command.rfind("attngeo simulate ", 0), 0u) << command;
    const auto at_out = command.find(" --out sim_fitted");
    ASSERT_NE(at_out, std::string::npos) << command;
    command = command.substr(8, at_out - 8) + " --trials 4 --N 1,2 --out " +
              (scratch() / "sim_fitted").string();
    const RunResult sim = run(command);
    EXPECT_EQ(sim.exit_code, 0) << command << "\n" << sim.err;
}

// Every CSV of a compare run reads with the column types docs/commands/compare.md lists:
// tests/python/check_csv_dtypes.py with pandas (Debian's python3-pandas), or Python's csv
// module applying the same rules when pandas is absent. It also fails on an undocumented CSV.
TEST(CompareCli, CsvDtypes) {
    const fs::path source = fs::path(ATTNGEO_SOURCE_DIR);
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no python3";
    const auto dir = make_extract_folder("dtypes");
    const fs::path out = scratch() / "dtypes_out";
    fs::remove_all(out);
    const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string() +
                            " --replicates 20 --threads 2 --quiet");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string check = python + " " +
                              (source / "tests/python/check_csv_dtypes.py").string() + " " +
                              (source / "docs/commands/compare.md").string() + " ";
    const fs::path log = scratch() / "dtypes.log";
    const int status = std::system((check + out.string() + " > " + log.string() + " 2>&1").c_str());
    std::cout << slurp(log);
    EXPECT_EQ(status, 0) << slurp(log);
    // The checker can fail: a float column holding text and an undocumented file are caught.
    const fs::path broken = scratch() / "dtypes_broken";
    fs::remove_all(broken);
    fs::create_directories(broken);
    fs::copy_file(out / "fits.csv", broken / "fits.csv");
    {
        std::string fits = slurp(out / "fits.csv");
        const std::size_t row = fits.find('\n') + 1;
        fits.replace(fits.find(',', fits.find(',', row) + 1) + 1, 0, "x");  // beta "x0.25…"
        std::ofstream(broken / "fits.csv") << fits;
    }
    EXPECT_NE(std::system((check + broken.string() + " > /dev/null 2>&1").c_str()), 0);
    fs::remove(broken / "fits.csv");
    std::ofstream(broken / "extra.csv") << "a,b\n1,2\n";
    EXPECT_NE(std::system((check + broken.string() + " > /dev/null 2>&1").c_str()), 0);
}

TEST(CompareCli, TheSimFolderIsCheckedAndRecorded) {
    const auto dir = make_extract_folder("cli_sim");
    const fs::path sim = scratch() / "cli_sim_run";
    fs::remove_all(sim);
    ASSERT_EQ(run("simulate --d 4 --L 15 --T1 2 --T2 10 --trials 4 --N 1,2 --kappa 1 --out " +
                  sim.string())
                  .exit_code,
              0);
    const fs::path out = scratch() / "cli_sim_out";
    fs::remove_all(out);
    const RunResult good = run("compare --emp " + dir.string() + " --sim " + sim.string() +
                               " --out " + out.string() + " --replicates 0 --kappa 0.5");
    ASSERT_EQ(good.exit_code, 0) << good.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest.at("sim"), fs::absolute(sim).lexically_normal().string());
    EXPECT_EQ(manifest.at("parameters").at("kappa"), 0.5);

    const fs::path bad_out = scratch() / "cli_sim_bad_out";
    fs::remove_all(bad_out);
    const RunResult bad = run("compare --emp " + dir.string() + " --sim " + dir.string() +
                              " --out " + bad_out.string());
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("manifest.json"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("expected \"simulate\""), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(bad_out));
}

TEST(CompareCli, BrokenFoldersExitTwoNamingTheFileAndWriteNothing) {
    struct Breakage {
        std::string name, file;
        std::function<void(const fs::path&)> apply;
    };
    const std::vector<Breakage> cases = {
        {"no_column", "heads.csv",
         [](const fs::path& d) { drop_column(d / "heads.csv", "regime"); }},
        {"ragged", "pr.csv",
         [](const fs::path& d) { edit_line(d / "pr.csv", "1,0,8,", "1,0,8,3,0.5"); }},
        {"bad_regime", "heads.csv",
         [](const fs::path& d) {
             std::string text = slurp(d / "heads.csv");
             text.replace(text.find("Reset"), 5, "Sleeper");
             put(d / "heads.csv", text);
         }},
        {"no_per_doc", "per_doc.safetensors",
         [](const fs::path& d) { fs::remove(d / "per_doc.safetensors"); }},
        {"truncated_per_doc", "per_doc.safetensors",
         [](const fs::path& d) {
             const std::string bytes = slurp(d / "per_doc.safetensors");
             put(d / "per_doc.safetensors", bytes.substr(0, bytes.size() / 2));
         }},
        {"no_manifest", "manifest.json",
         [](const fs::path& d) { fs::remove(d / "manifest.json"); }},
    };
    for (const Breakage& b : cases) {
        const auto dir = make_extract_folder("broken_" + b.name);
        b.apply(dir);
        const fs::path out = scratch() / ("broken_out_" + b.name);
        fs::remove_all(out);
        const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << b.name << ": " << r.err;
        EXPECT_NE(r.err.find(b.file), std::string::npos) << b.name << ": " << r.err;
        // The inputs are validated before "[compare] started": one line, the error.
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << b.name << ": " << r.err;
        EXPECT_EQ(r.err.rfind("attngeo compare: ", 0), 0u) << b.name << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << b.name;
    }
    // Bad flags.
    const auto dir = make_extract_folder("bad_flags");
    const fs::path out = scratch() / "bad_flags_out";
    for (const std::string flags : {"--max-lag-fit 1", "--replicates -1", "--kappa -2",
                                    "--cosines exact", "--threads -1", "--count-per group"}) {
        const RunResult r =
            run("compare --emp " + dir.string() + " --out " + out.string() + " " + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(flags.substr(0, flags.find(' '))), std::string::npos)
            << flags << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << flags;
    }
}

TEST(EmpiricalRunReader, StandardErrorsMayBeEmptyOnlyBelowTwoDocuments) {
    {
        const auto dir = make_extract_folder("one_document", 1, 1);
        const EmpiricalRun run = read_empirical_run(dir.string());
        const EmpiricalHead& h = run.at(1, 1);
        ASSERT_EQ(h.P_se.size(), kSizes.size());
        for (std::size_t s = 0; s < kSizes.size(); ++s) {
            EXPECT_FALSE(h.P_se[s].has_value()) << s;
            EXPECT_FALSE(h.R_se[s].has_value()) << s;
        }
        EXPECT_DOUBLE_EQ(h.R_mean[2], 0.3 + 0.1 * 2);
        EXPECT_DOUBLE_EQ(h.regime_margin, 1.25 + 3);
    }
    {
        const auto run = read_empirical_run(make_extract_folder("three_documents").string());
        ASSERT_TRUE(run.at(0, 1).P_se[3].has_value());
        EXPECT_DOUBLE_EQ(*run.at(0, 1).P_se[3], 0.01);
    }
    {
        const auto dir = make_extract_folder("empty_se_with_documents");
        edit_line(dir / "pr.csv", "0,1,4,", "0,1,4,3,0.5,,0.5,0.01,0.5,0.5");
        expect_reader_error(dir, {"pr.csv' line", "'P_se'", "fewer than 2 documents"});
    }
    {
        const auto dir = make_extract_folder("nan_se", 1, 1);
        edit_line(dir / "pr.csv", "0,1,4,", "0,1,4,1,0.5,nan,0.5,,0.5,0.5");
        expect_reader_error(dir, {"pr.csv' line", "'P_se'"});
    }
    {
        const auto dir = make_extract_folder("margin_below_one");
        std::string text = slurp(dir / "heads.csv");
        text.replace(text.find(",Retriever,1.25"), 15, ",Retriever,0.75");
        put(dir / "heads.csv", text);
        expect_reader_error(dir, {"heads.csv' line", "'regime_margin'", "expected a ratio >= 1"});
    }
    {
        const auto dir = make_extract_folder("margin_infinite");
        std::string text = slurp(dir / "heads.csv");
        text.replace(text.find(",Reset,3.25"), 11, ",Reset,inf");
        put(dir / "heads.csv", text);
        EXPECT_TRUE(std::isinf(read_empirical_run(dir.string()).at(1, 0).regime_margin));
    }
}

// Runs compare on `dir` with `flags` into a fresh folder named `name`.
fs::path compare_into(const fs::path& dir, const std::string& name, const std::string& flags) {
    const fs::path out = scratch() / name;
    fs::remove_all(out);
    const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string() +
                            " --replicates 40 " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    return out;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(CompareCli, CountPerKvAndQueryGiveTheSameNumbersWithoutGqa) {
    const auto dir = make_extract_folder("no_gqa");
    const fs::path kv = compare_into(dir, "no_gqa_kv", "--count-per kv");
    const fs::path query = compare_into(dir, "no_gqa_query", "--count-per query");
    for (const char* file : {"fits.csv", "corr_rho0.csv", "regimes.csv", "pr_by_regime.csv"})
        EXPECT_EQ(slurp(kv / file), slurp(query / file)) << file;
    auto params_kv = nlohmann::json::parse(slurp(kv / "fitted_params.json"));
    auto params_query = nlohmann::json::parse(slurp(query / "fitted_params.json"));
    EXPECT_EQ(params_kv.at("count_per"), "kv");
    EXPECT_EQ(params_query.at("count_per"), "query");
    EXPECT_EQ(params_kv.at("heads_counted"), kLayers * kHeads);
    params_kv.erase("count_per");
    params_query.erase("count_per");
    EXPECT_EQ(params_kv, params_query);
    for (const auto& row : read_csv(kv / "regimes.csv")) {
        const int i = std::stoi(row.at("layer")) * kHeads + std::stoi(row.at("head"));
        EXPECT_DOUBLE_EQ(std::stod(row.at("regime_margin")), 1.25 + i);  // copied from heads.csv
    }
}

TEST(CompareCli, GqaValueStatisticsEnterOncePerKeyValueHead) {
    // Two query heads per key/value head: head 1 of each layer repeats head 0.
    const auto dir = make_extract_folder("gqa", 2);
    const fs::path kv = compare_into(dir, "gqa_kv", "");  // kv is the default
    const fs::path query = compare_into(dir, "gqa_query", "--count-per query");
    for (const auto& [out, per_kv] : {std::make_pair(kv, true), std::make_pair(query, false)}) {
        const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
        EXPECT_EQ(manifest.at("parameters").at("count_per"), per_kv ? "kv" : "query");
        EXPECT_EQ(manifest.at("counting").at("query_heads_per_kv_head"), 2);
        std::vector<double> betas, rho0s;
        for (const auto& row : read_csv(out / "fits.csv")) {
            const bool counted = !per_kv || row.at("head") == "0";
            EXPECT_EQ(row.at("counted"), counted ? "1" : "0");
            EXPECT_EQ(row.at("kv_head"), "0");
            if (!counted) continue;
            betas.push_back(std::stod(row.at("beta")));
            rho0s.push_back(std::stod(row.at("rho0")));
        }
        const auto params = nlohmann::json::parse(slurp(out / "fitted_params.json"));
        EXPECT_EQ(params.at("heads_counted"), betas.size());
        EXPECT_EQ(params.at("median_over_heads").at("beta").get<double>(), median_of(betas));
        EXPECT_EQ(params.at("median_over_heads").at("rho0").get<double>(), median_of(rho0s));
        for (const auto& row : read_csv(out / "corr_rho0.csv"))
            EXPECT_EQ(row.at("heads"), per_kv ? "2" : "4");
    }
    // Per kv head the β median is over heads 0 of each layer only (β of heads 0 and 2).
    const auto params = nlohmann::json::parse(slurp(kv / "fitted_params.json"));
    EXPECT_NEAR(params.at("median_over_heads").at("beta").get<double>(),
                0.5 * (beta_of(0) + beta_of(2)), 1e-6);

    // kv_head must be head / (heads / kv_heads).
    const auto broken = make_extract_folder("gqa_bad_kv_head", 2);
    edit_line(broken / "heads.csv", "1,1,0,",
              "1,1,1,3,0.98,1,0.01,0.2,0.5,0.1,0.1,0.1,0.1,0.2,0.3,Mixer,1.5");
    const fs::path out = scratch() / "gqa_bad_out";
    fs::remove_all(out);
    const RunResult r = run("compare --emp " + broken.string() + " --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("heads.csv: layer 0 head 1 has kv_head 0"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

TEST(CompareCli, OneDocumentLeavesTheBootstrapIntervalEmpty) {
    const auto dir = make_extract_folder("one_document_cli", 1, 1);
    const fs::path out = compare_into(dir, "one_document_cli_out", "");
    for (const auto& row : read_csv(out / "corr_rho0.csv")) {
        EXPECT_EQ(row.at("ci_lo"), "");
        EXPECT_EQ(row.at("ci_hi"), "");
        EXPECT_EQ(row.at("replicates"), "0");
        EXPECT_NE(row.at("corr"), "");
    }
    const std::string manifest = slurp(out / "manifest.json");
    EXPECT_NE(manifest.find("the bootstrap needs >= 2 documents (this run has 1)"),
              std::string::npos);
    // No undefined value written as nan; the envelope files (compare/envelopes) are checked
    // by their own tests.
    for (const char* file :
         {"fits.csv", "profile.csv", "profile_global.csv", "corr_rho0.csv", "regimes.csv",
          "regime_counts.csv", "pr_by_regime.csv", "contrib_by_regime.csv", "fitted_params.json"})
        EXPECT_EQ(slurp(out / file).find("nan"), std::string::npos) << file;
    auto manifest_json = nlohmann::json::parse(manifest);
    manifest_json.erase("envelopes");
    EXPECT_EQ(manifest_json.dump().find("nan"), std::string::npos);
}

// A head whose mean sink α reads as 0 (by_position.csv's 2^-64 fixed point: stories260K at
// context 256 has one) cannot be fitted: compare records the failure and carries on, and the
// other heads' profiles are those of the intact folder.
TEST(CompareCli, AnUnfittableHeadProfileIsRecordedNotFatal) {
    const fs::path intact = compare_into(make_extract_folder("sink_intact"), "sink_intact_out", "");
    const auto dir = make_extract_folder("sink_zero");
    {  // layer 1 head 1: the sink's mass moves to position 1, so α still sums to 1
        std::istringstream in(slurp(dir / "by_position.csv"));
        std::ostringstream out;
        double sink = 0;
        for (std::string line; std::getline(in, line);) {
            std::vector<std::string> fields = split_fields(line);
            if (line.rfind("1,1,0,", 0) == 0) sink = std::stod(fields[4]), fields[4] = "0";
            if (line.rfind("1,1,1,", 0) == 0)
                fields[4] = format_double(std::stod(fields[4]) + sink);
            for (std::size_t c = 0; c < fields.size(); ++c)
                out << (c ? "," : "") << fields[c];
            out << '\n';
        }
        put(dir / "by_position.csv", out.str());
    }
    const fs::path out = compare_into(dir, "sink_zero_out", "");
    const auto rows = read_csv(out / "profile.csv"), expected = read_csv(intact / "profile.csv");
    ASSERT_EQ(rows.size(), expected.size());
    int failed = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const bool broken = rows[r].at("layer") == "1" && rows[r].at("head") == "1";
        EXPECT_EQ(rows[r].at("fit_failed"), broken ? "1" : "0");
        failed += rows[r].at("fit_failed") == "1";
        if (!broken) {
            EXPECT_EQ(rows[r], expected[r]);  // byte-equal fields, fit_failed included
            continue;
        }
        for (const char* column : {"p_sink", "p_base", "eta", "omega", "T1", "T2", "r2_log"})
            EXPECT_EQ(rows[r].at(column), "") << column;
        EXPECT_EQ(rows[r].at("at_bound"), "0");
    }
    std::printf("failed profile fits: %d of %zu heads\n", failed, rows.size());
    EXPECT_EQ(failed, 1);
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    const auto& record = manifest.at("profile_fits_failed");
    EXPECT_EQ(record.at("count"), 1);
    ASSERT_EQ(record.at("heads").size(), 1u);
    EXPECT_EQ(record.at("heads")[0].at("layer"), 1);
    EXPECT_EQ(record.at("heads")[0].at("head"), 1);
    EXPECT_NE(record.at("heads")[0].at("why").get<std::string>().find("alpha[0] = 0"),
              std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(slurp(intact / "manifest.json"))
                  .at("profile_fits_failed")
                  .at("count"),
              0);
    // Without a fitted profile the head's points have no Table-2 regime in bounds.csv.
    for (const auto& row : read_csv(out / "bounds.csv"))
        if (row.at("layer") == "1" && row.at("head") == "1") {
            EXPECT_EQ(row.at("regime"), "NA");
        }
}

// The audit's case end to end: one document of stories260K at context 256 has heads whose mean
// sink α is below the 2^-64 resolution; compare goes through and names them.
TEST(CompareCli, Stories260kOneDocumentContext256ComparesDespiteUnfittableHeads) {
    const fs::path model = test_support::shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(model / "stories260K.bin");
    if (!test_support::extract_built(ATTNGEO_EXE, scratch()))
        GTEST_SKIP() << "attngeo built without extract";
    const fs::path emp = scratch() / "s260k_c256_one_doc", out = scratch() / "s260k_c256_cmp";
    fs::remove_all(emp);
    fs::remove_all(out);
    const RunResult extract =
        run("extract --quiet --model " + (model / "stories260K.bin").string() + " --corpus " +
            (fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt").string() +
            " --context 256 --docs 1 --out " + emp.string());
    ASSERT_EQ(extract.exit_code, 0) << extract.err;
    const RunResult compare =
        run("compare --quiet --emp " + emp.string() + " --out " + out.string());
    ASSERT_EQ(compare.exit_code, 0) << compare.err;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    const auto& failed = manifest.at("profile_fits_failed");
    int flagged = 0;
    for (const auto& row : read_csv(out / "profile.csv"))
        flagged += row.at("fit_failed") == "1";
    std::printf("stories260K context 256, one document: %d of 40 head profiles not fitted\n",
                flagged);
    EXPECT_EQ(failed.at("count").get<int>(), flagged);
    EXPECT_GT(flagged, 0);  // the degenerate heads the audit found are there
    EXPECT_LT(flagged, 40);
}

// ---- Table 1 (compare/table1, computed by compare; its unit tests are in tests/simulate) ----

// The simulate command's flags as numbers: --lambda 0.5 → {"lambda", 0.5}.
std::map<std::string, double> command_flags(const std::string& command) {
    std::map<std::string, double> flags;
    std::istringstream words(command);
    std::string word, value;
    while (words >> word)
        if (word.rfind("--", 0) == 0 && words >> value && word != "--out")
            flags[word.substr(2)] = std::stod(value);
    return flags;
}

TEST(CompareCli, Table1IsComputedAtTheFittedParameters) {
    const auto dir = make_extract_folder("table1");
    const fs::path out = compare_into(dir, "table1_out", "");
    const auto params = nlohmann::json::parse(slurp(out / "fitted_params.json"));
    const auto flags = command_flags(params.at("simulate_command"));
    theory::ModelParameters p;
    p.profile.L = static_cast<int>(flags.at("L"));
    p.profile.p_sink = flags.at("p-sink");
    p.profile.T1 = static_cast<int>(flags.at("T1"));
    p.profile.T2 = static_cast<int>(flags.at("T2"));
    p.profile.eta = flags.at("eta");
    p.profile.omega = flags.at("omega");
    p.C = flags.at("C");
    p.lambda = flags.at("lambda");
    p.beta = flags.at("beta");
    p.rho0 = flags.at("rho0");
    const auto kappa = nlohmann::json::parse(slurp(out / "kappa.json"));
    theory::BoundSettings s;
    s.d = flags.at("d");
    const nlohmann::json& rows_kappa = kappa.at("variants").at("paper").at("rows_kappa");
    s.kappa = rows_kappa.is_number() ? rows_kappa.get<double>() : 1.0;  // 1: no joint κ
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest.at("table1").at("kappa").get<double>(), s.kappa);
    EXPECT_EQ(manifest.at("table1").at("d").get<double>(), kHeadDim);
    EXPECT_TRUE(manifest.at("table1").at("error").is_null());

    // table1.csv read back as a Table1 (the text round-trips: shortest round-trip digits).
    std::vector<theory::SensitivityRow> written;
    std::set<int> sizes;
    for (const auto& row : read_csv(out / "table1.csv")) {
        theory::SensitivityRow r;
        r.parameter = row.at("parameter");
        r.N = std::stoi(row.at("N"));
        r.precision_lower = std::stod(row.at("dP_lower"));
        r.precision_upper = std::stod(row.at("dP_upper"));
        r.recall_lower = std::stod(row.at("dR_lower"));
        r.recall_upper = std::stod(row.at("dR_upper"));
        written.push_back(r);
        sizes.insert(r.N);
    }
    EXPECT_EQ(sizes, std::set<int>({2, 4, 16, 64}));  // followed_sizes(kSizes)
    const double worst = test_support::largest_log_derivative_difference(written, p, s);
    std::cout << "compare's table1.csv against central differences at the fitted parameters: "
                 "largest difference "
              << worst << "\n";
    EXPECT_LT(worst, 1e-6);
}

// With stderr in a file (as the runner captures it) compare reports its envelope stage as plain
// lines: a start line, counted lines with a rate and an ETA, a closing line; never a '\r'.
// ATTNGEO_PROGRESS_SECONDS=0 prints every update, so a small run shows them all; --quiet none.
TEST(CompareCli, ProgressLinesOnStderrAndQuietSilencesThem) {
    const auto dir = make_extract_folder("cli_progress");
    ASSERT_EQ(setenv("ATTNGEO_PROGRESS_SECONDS", "0", 1), 0);
    const fs::path out = scratch() / "cli_progress_out";
    fs::remove_all(out);
    const RunResult loud = run("compare --emp " + dir.string() + " --out " + out.string() +
                               " --replicates 20 --threads 2");
    fs::remove_all(out);
    const RunResult quiet = run("compare --emp " + dir.string() + " --out " + out.string() +
                                " --replicates 20 --threads 2 --quiet");
    unsetenv("ATTNGEO_PROGRESS_SECONDS");
    ASSERT_EQ(loud.exit_code, 0) << loud.err;
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_EQ(quiet.err, "");
    EXPECT_EQ(loud.err.find('\r'), std::string::npos);

    const std::string label = "[compare envelopes (parametric)] ";
    std::istringstream lines(loud.err);
    std::string line;
    int started = 0, counted = 0, with_eta = 0, done = 0;
    long long previous = -1;
    while (std::getline(lines, line)) {
        if (line.rfind(label, 0) != 0) continue;
        const std::string rest = line.substr(label.size());
        if (rest.rfind("started: ", 0) == 0) {
            ++started;
        } else if (rest.rfind("done: ", 0) == 0) {
            ++done;
        } else {
            const long long count = std::stoll(rest.substr(0, rest.find('/')));
            EXPECT_GE(count, previous) << line;  // the count never goes back
            previous = count;
            ++counted;
            with_eta += rest.find("ETA ") != std::string::npos;
        }
    }
    std::cout << "progress lines: " << counted << " counted, " << with_eta << " with an ETA\n";
    EXPECT_EQ(started, 1) << loud.err;
    EXPECT_EQ(done, 1) << loud.err;
    EXPECT_GE(counted, 3) << loud.err;  // a line per bound variant before the closing one
    EXPECT_GT(with_eta, 0) << loud.err;
}

}  // namespace
}  // namespace attngeo::compare

namespace attngeo::compare {
namespace {

bool flag(const std::map<std::string, std::string>& row, const char* column) {
    return row.at(column) == "1";
}

// assumptions.csv recounted plainly from heads.csv, fits.csv, profile.csv and cos_by_lag.csv,
// and the manifest's counts from assumptions.csv.
void expect_assumptions_recount(const fs::path& emp, const fs::path& out) {
    const auto heads = read_csv(emp / "heads.csv");
    const auto fits = read_csv(out / "fits.csv");
    const auto profile = read_csv(out / "profile.csv");
    const auto rows = read_csv(out / "assumptions.csv");
    const auto lags = read_csv(emp / "cos_by_lag.csv");
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    const int K = manifest.at("parameters").at("lags_fitted");
    ASSERT_EQ(rows.size(), heads.size());
    std::map<std::string, int> counts;
    std::vector<double> masses;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const double lambda = std::stod(heads[i].at("lambda")),
                     cv = std::stod(heads[i].at("cv_positional"));
        EXPECT_EQ(flag(row, "compressed_sink"), lambda > 0 && lambda < 1);
        EXPECT_EQ(flag(row, "stable_norms"), cv <= 0.05);
        EXPECT_EQ(flag(row, "A1_holds"), lambda > 0 && lambda < 1 && cv <= 0.05);
        // A2: the cosines of this head at lags 1..K, the fitted β, both baselines.
        std::vector<double> c;
        for (const auto& lag : lags)
            if (lag.at("layer") == heads[i].at("layer") && lag.at("head") == heads[i].at("head") &&
                std::stoi(lag.at("lag")) <= K)
                c.push_back(std::stod(lag.at("cos_mean")));
        const double beta = std::stod(fits[i].at("beta"));
        double mae_exp = 0, mae_zero = 0, best_constant = 1e300;
        for (int k = 1; k <= K; ++k) {
            mae_exp += std::abs(c[k - 1] - std::exp(-beta * k)) / K;
            mae_zero += std::abs(c[k - 1]) / K;
        }
        for (double m : c) {  // the best constant in MAE is one of the values
            double mae = 0;
            for (double x : c)
                mae += std::abs(x - m) / K;
            best_constant = std::min(best_constant, mae);
        }
        EXPECT_NEAR(std::stod(row.at("mae_exp")), mae_exp, 1e-12);
        EXPECT_NEAR(std::stod(row.at("mae_exp")), std::stod(fits[i].at("mae")), 1e-12);
        EXPECT_NEAR(std::stod(row.at("mae_constant")), best_constant, 1e-12);
        EXPECT_NEAR(std::stod(row.at("mae_zero")), mae_zero, 1e-12);
        const double baseline = std::min(best_constant, mae_zero);
        const bool informative = baseline > 0 && mae_exp <= 0.8 * baseline;
        EXPECT_EQ(flag(row, "beta_uninformative"), !informative) << i;
        EXPECT_EQ(flag(row, "A2_holds"), informative);
        // A3 from profile.csv.
        const bool fitted = profile[i].at("fit_failed") == "0";
        const bool sink =
            fitted && std::stod(profile[i].at("p_sink")) > std::stod(profile[i].at("p_base"));
        const bool r2 = fitted && std::stod(profile[i].at("r2_log")) >= 0.9;
        const std::string unidentified = profile[i].at("unidentified");
        const bool identified = fitted && profile[i].at("at_bound") == "0" && unidentified.empty();
        EXPECT_EQ(flag(row, "sink_exists"), sink);
        EXPECT_EQ(flag(row, "profile_r2_ok"), r2);
        EXPECT_EQ(flag(row, "profile_identified"), identified) << unidentified;
        EXPECT_EQ(flag(row, "A3_holds"), sink && r2 && identified);
        for (const char* name :
             {"A1_holds", "compressed_sink", "stable_norms", "A2_holds", "beta_uninformative",
              "A3_holds", "sink_exists", "profile_r2_ok", "profile_identified"})
            counts[name] += flag(row, name);
        masses.push_back(std::stod(heads[i].at("sink_mass")));
    }
    const auto& block = manifest.at("assumptions");
    EXPECT_EQ(block.at("heads"), rows.size());
    for (const auto& [name, count] : counts)
        EXPECT_EQ(block.at(name), count) << name;
    EXPECT_DOUBLE_EQ(block.at("median_sink_mass").get<double>(), median_of(masses));
    // Where the sinks are: a plain scan for the largest masses among the heads with a sink.
    std::vector<std::size_t> remaining;
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (flag(rows[i], "sink_exists")) remaining.push_back(i);
    const auto& strongest = block.at("strongest_sinks");
    ASSERT_EQ(strongest.size(), std::min<std::size_t>(3, remaining.size()));
    for (const auto& listed : strongest) {
        std::size_t best = 0;
        for (std::size_t k = 1; k < remaining.size(); ++k)
            if (masses[remaining[k]] > masses[remaining[best]]) best = k;
        const std::size_t i = remaining[best];
        EXPECT_EQ(listed.at("layer").dump(), heads[i].at("layer"));
        EXPECT_EQ(listed.at("head").dump(), heads[i].at("head"));
        EXPECT_DOUBLE_EQ(listed.at("sink_mass").get<double>(), masses[i]);
        remaining.erase(remaining.begin() + static_cast<long>(best));
    }
}

}  // namespace

TEST(CompareCli, FitIntervalsCoverTheKnownParametersAndAssumptionsRecount) {
    const auto dir = make_extract_folder("fit_arrays", 1, 8, true);
    const fs::path out = compare_into(dir, "fit_arrays_out", "");
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_TRUE(manifest.at("intervals").at("available").get<bool>());
    EXPECT_EQ(manifest.at("intervals").at("replicates"), 200);
    EXPECT_TRUE(manifest.at("intervals").at("note").is_null());
    EXPECT_TRUE(manifest.at("timings").contains("intervals_s"));
    std::cout << "fit intervals: " << manifest.at("timings").at("intervals_s") << " s of "
              << manifest.at("timings").at("total_s") << " s\n";
    for (const auto& row : read_csv(out / "fits.csv")) {
        const int i = std::stoi(row.at("layer")) * kHeads + std::stoi(row.at("head"));
        for (const char* name : {"beta", "beta_offset", "c_inf", "lambda", "C", "rho0"}) {
            const std::string lo = row.at(std::string(name) + "_lo"),
                              hi = row.at(std::string(name) + "_hi");
            ASSERT_FALSE(lo.empty() || hi.empty()) << name;
            EXPECT_LE(std::stod(lo), std::stod(hi)) << name;
        }
        EXPECT_LE(std::stod(row.at("beta_lo")), beta_of(i) * (1 + 1e-6));
        EXPECT_GE(std::stod(row.at("beta_hi")), beta_of(i) * (1 - 1e-6));
        EXPECT_LE(std::stod(row.at("C_lo")), std::stod(row.at("C")));
        EXPECT_GE(std::stod(row.at("C_hi")), std::stod(row.at("C")));
        EXPECT_EQ(row.at("unidentified").find("beta"), std::string::npos) << row.at("unidentified");
    }
    for (const auto& row : read_csv(out / "profile.csv")) {
        const int i = std::stoi(row.at("layer")) * kHeads + std::stoi(row.at("head"));
        ASSERT_FALSE(row.at("p_sink_lo").empty());
        EXPECT_LE(std::stod(row.at("p_sink_lo")), profile_of(i).p_sink * (1 + 1e-5));
        EXPECT_GE(std::stod(row.at("p_sink_hi")), profile_of(i).p_sink * (1 - 1e-5));
    }
    const auto global = read_csv(out / "profile_global.csv");
    ASSERT_EQ(global.size(), 1u);
    EXPECT_FALSE(global[0].at("T1_lo").empty());
    const auto params = nlohmann::json::parse(slurp(out / "fitted_params.json"));
    EXPECT_TRUE(params.at("intervals_95").at("beta").is_array());
    EXPECT_TRUE(params.at("from_failed_checks").is_array());
    // Every clamp of the global profile is listed, and every all-nan row of table1.csv named.
    std::set<std::string> clamped;
    for (const auto& c : params.at("clamped"))
        clamped.insert(c.at("parameter").get<std::string>());
    for (const char* name : {"eta", "omega", "p_sink"})
        EXPECT_EQ(clamped.count(name), global[0].at(std::string(name) + "_at_bound") == "1")
            << name;
    expect_assumptions_recount(dir, out);
    // The same seed gives the same intervals.
    const fs::path again = compare_into(dir, "fit_arrays_again", "--threads 1");
    EXPECT_EQ(slurp(again / "fits.csv"), slurp(out / "fits.csv"));
    EXPECT_EQ(slurp(again / "profile.csv"), slurp(out / "profile.csv"));
}

// per_doc.safetensors without the fit intervals' arrays is not an extract folder compare reads:
// one line naming the file and the tensor, nothing written.
TEST(CompareCli, PerDocWithoutFitArraysIsAnInputError) {
    const auto dir = make_extract_folder("without_fit_arrays", 1, kDocs, false);
    const fs::path out = scratch() / "without_fit_arrays_out";
    fs::remove_all(out);
    const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("per_doc.safetensors"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cos_by_lag"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << r.err;
}

TEST(CompareCli, Table1NamesWhyARowIsNan) {
    const auto dir = make_extract_folder("table1_nan", 1, 4, true);
    const fs::path out = compare_into(dir, "table1_nan_out", "");
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    std::set<std::string> named;
    for (const auto& row : manifest.at("table1").at("undefined_rows")) {
        named.insert(row.at("parameter").get<std::string>());
        EXPECT_FALSE(row.at("why").get<std::string>().empty());
    }
    std::map<std::string, bool> any_number;
    for (const auto& row : read_csv(out / "table1.csv"))
        for (const auto& [column, value] : row)
            if (column != "parameter" && column != "N")
                any_number[row.at("parameter")] |= value != "nan" && !value.empty();
    for (const auto& [parameter, has] : any_number)
        EXPECT_EQ(named.count(parameter), !has) << parameter;
}

}  // namespace attngeo::compare

namespace attngeo::compare {

// Every head puts 1e-12 on its sink (the rest moves to position 1), so the global profile's
// p_sink sits below its floor: fitted_params.json's clamped lists it (the issue: the global
// profile sat at a clamp while clamped was []), A3 fails everywhere (no sink), and the profile
// parameters are marked as drawn from failed checks.
TEST(CompareCli, AClampedGlobalProfileIsListedAndMarkedAsFromFailedChecks) {
    const auto dir = make_extract_folder("no_sink");
    std::istringstream in(slurp(dir / "by_position.csv"));
    std::ostringstream edited;
    double moved = 0;
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> fields = split_fields(line);
        if (fields.size() > 4 && fields[2] == "0") {
            moved = std::stod(fields[4]) - 1e-12;
            fields[4] = "1e-12";
        } else if (fields.size() > 4 && fields[2] == "1") {
            fields[4] = format_double(std::stod(fields[4]) + moved);
        }
        for (std::size_t c = 0; c < fields.size(); ++c)
            edited << (c ? "," : "") << fields[c];
        edited << '\n';
    }
    put(dir / "by_position.csv", edited.str());
    const fs::path out = compare_into(dir, "no_sink_out", "");
    const auto global = read_csv(out / "profile_global.csv");
    ASSERT_EQ(global.size(), 1u);
    EXPECT_EQ(global[0].at("p_sink_at_bound"), "1");
    const auto params = nlohmann::json::parse(slurp(out / "fitted_params.json"));
    std::set<std::string> clamped, failed;
    for (const auto& c : params.at("clamped"))
        clamped.insert(c.at("parameter").get<std::string>());
    for (const auto& name : params.at("from_failed_checks"))
        failed.insert(name.get<std::string>());
    EXPECT_EQ(clamped.count("p_sink"), 1u) << params.at("clamped").dump();
    for (const char* name : {"p_sink", "p_base", "eta", "omega", "T1", "T2"})
        EXPECT_EQ(failed.count(name), 1u) << name;
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    EXPECT_EQ(manifest.at("assumptions").at("sink_exists"), 0);
    EXPECT_EQ(manifest.at("assumptions").at("A3_holds"), 0);
    expect_assumptions_recount(dir, out);
}

}  // namespace attngeo::compare

namespace attngeo::compare {

// ---- extract --queries: the by-length files and compare's summaries of them ------------------

// Three length bins of L over the context 64 and the N grid 1, 2, 4 (all ≤ every bin's
// shortest measured L); head i = layer · kHeads + head, bin b, N index s.
struct SyntheticBin {
    int lo, hi, shortest;
    double length_mean;
};
const SyntheticBin kBins[3] = {{1, 21, 8, 14.5}, {22, 42, 22, 32}, {43, 64, 43, 53.5}};
const int kBinSizes[3] = {1, 2, 4};
// Regime of head i in bin b.
const char* const kBinRegime[3][4] = {{"Retriever", "Mixer", "Mixer", "Reset"},
                                      {"Mixer", "Mixer", "Mixer", "Reset"},
                                      {"Reset", "Reset", "Retriever", "Reset"}};
double by_length_P(int i, int b, int s) {
    return 0.3 + 0.05 * i * i + 0.1 * b - 0.02 * s;
}
double by_length_R(int i, int b, int s) {
    return 0.2 + 0.07 * i - 0.03 * b * i + 0.05 * s;
}

// The folder of make_extract_folder with by_length.csv, heads_by_length.csv and the
// manifest's parameters.queries and length_bins, as extract --queries every:7 writes them.
fs::path make_by_length_folder(const std::string& name) {
    const fs::path dir = make_extract_folder(name);
    nlohmann::json manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
    manifest["parameters"]["queries"] = "every:7";
    nlohmann::json bins = nlohmann::json::array();
    for (const auto& bin : kBins)
        bins.push_back({{"lo", bin.lo},
                        {"hi", bin.hi},
                        {"shortest", bin.shortest},
                        {"positions", 3},
                        {"length_mean", bin.length_mean}});
    manifest["parameters"]["length_bins"] = bins;
    put(dir / "manifest.json", manifest.dump(2));
    std::ostringstream pr, heads;
    pr << "layer,head,length_lo,length_hi,N,queries,P_mean,P_se,R_mean,R_se\n";
    heads << "layer,head,length_lo,length_hi,queries,lambda,rho0,sink_mass,m_sink,m_last,m_rest,"
             "regime\n";
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const int i = l * kHeads + h;
            for (int b = 0; b < 3; ++b) {
                const auto& bin = kBins[b];
                for (int s = 0; s < 3; ++s)
                    pr << l << ',' << h << ',' << bin.lo << ',' << bin.hi << ',' << kBinSizes[s]
                       << ",9," << format_double(by_length_P(i, b, s)) << ",0.01,"
                       << format_double(by_length_R(i, b, s)) << ",0.02\n";
                heads << l << ',' << h << ',' << bin.lo << ',' << bin.hi << ",9,0.5,"
                      << format_double(0.1 * i) << ",0.3,0.2,0.4,0.3," << kBinRegime[b][i] << '\n';
            }
        }
    put(dir / "by_length.csv", pr.str());
    put(dir / "heads_by_length.csv", heads.str());
    return dir;
}

// read_by_length must fail with one InputError line naming `file`.
void expect_input_error_in(const fs::path& dir, const std::string& file) {
    attngeo::test_support::expect_input_error(
        [&] { (void)read_by_length(read_empirical_run(dir.string())); }, {file});
}

TEST(CompareByLength, SummariesMatchAnIndependentComputation) {
    const auto dir = make_by_length_folder("by_length");
    const fs::path out = compare_into(dir, "by_length_out", "--threads 2");
    const int heads = kLayers * kHeads;

    const auto summary = read_csv(out / "by_length_summary.csv");
    EXPECT_EQ(first_line(out / "by_length_summary.csv"),
              "length_lo,length_hi,length_mean,N,heads,P_mean,R_mean,P_head_sd,R_head_sd");
    ASSERT_EQ(summary.size(), 9u);
    double largest = 0;
    for (int b = 0; b < 3; ++b)
        for (int s = 0; s < 3; ++s) {
            const auto& row = summary[b * 3 + s];  // by bin, then N
            EXPECT_EQ(std::stoi(row.at("length_lo")), kBins[b].lo);
            EXPECT_EQ(std::stoi(row.at("length_hi")), kBins[b].hi);
            EXPECT_EQ(std::stod(row.at("length_mean")), kBins[b].length_mean);
            EXPECT_EQ(std::stoi(row.at("N")), kBinSizes[s]);
            EXPECT_EQ(std::stoi(row.at("heads")), heads);
            // The reference: sums and sums of squares, sd = √((Σx² − n·mean²)/(n − 1)).
            double sum[2] = {0, 0}, squares[2] = {0, 0};
            for (int i = 0; i < heads; ++i) {
                const double x[2] = {by_length_P(i, b, s), by_length_R(i, b, s)};
                for (int m = 0; m < 2; ++m)
                    sum[m] += x[m], squares[m] += x[m] * x[m];
            }
            const char* means[2] = {"P_mean", "R_mean"};
            const char* sds[2] = {"P_head_sd", "R_head_sd"};
            for (int m = 0; m < 2; ++m) {
                const double mean = sum[m] / heads;
                const double sd = std::sqrt((squares[m] - heads * mean * mean) / (heads - 1));
                largest = std::max({largest, std::abs(std::stod(row.at(means[m])) - mean),
                                    std::abs(std::stod(row.at(sds[m])) - sd)});
            }
        }
    std::cout << "largest difference, by_length_summary.csv vs the reference: " << largest << "\n";
    EXPECT_LE(largest, 1e-12);

    const auto regimes = read_csv(out / "regimes_by_length.csv");
    EXPECT_EQ(first_line(out / "regimes_by_length.csv"),
              "length_lo,length_hi,length_mean,heads,Retriever,Mixer,Reset");
    ASSERT_EQ(regimes.size(), 3u);
    for (int b = 0; b < 3; ++b) {
        EXPECT_EQ(std::stoi(regimes[b].at("length_lo")), kBins[b].lo);
        EXPECT_EQ(std::stod(regimes[b].at("length_mean")), kBins[b].length_mean);
        EXPECT_EQ(std::stoi(regimes[b].at("heads")), heads);
        for (const char* regime : {"Retriever", "Mixer", "Reset"}) {
            int count = 0;
            for (int i = 0; i < heads; ++i)
                count += std::string(kBinRegime[b][i]) == regime;
            EXPECT_DOUBLE_EQ(std::stod(regimes[b].at(regime)), count / 4.0) << b << regime;
        }
    }
    const auto manifest = nlohmann::json::parse(slurp(out / "manifest.json"));
    ASSERT_TRUE(manifest.contains("by_length"));
    EXPECT_EQ(manifest.at("by_length").at("queries"), "every:7");
    EXPECT_EQ(manifest.at("by_length").at("bins").size(), 3u);
    EXPECT_EQ(manifest.at("emp_parameters").at("queries"), "every:7");

    // The new files read with the types docs/commands/compare.md lists.
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) == 0) {
        const fs::path source = fs::path(ATTNGEO_SOURCE_DIR);
        const fs::path log = scratch() / "by_length_dtypes.log";
        const int status =
            std::system((python + " " + (source / "tests/python/check_csv_dtypes.py").string() +
                         " " + (source / "docs/commands/compare.md").string() + " " + out.string() +
                         " > " + log.string() + " 2>&1")
                            .c_str());
        EXPECT_EQ(status, 0) << slurp(log);
        const fs::path extract_log = scratch() / "by_length_extract_dtypes.log";
        const fs::path only = scratch() / "by_length_files";
        fs::remove_all(only);
        fs::create_directories(only);
        for (const char* file : {"by_length.csv", "heads_by_length.csv"})
            fs::copy_file(dir / file, only / file);
        const int extract_status =
            std::system((python + " " + (source / "tests/python/check_csv_dtypes.py").string() +
                         " " + (source / "docs/commands/extract.md").string() + " " +
                         only.string() + " > " + extract_log.string() + " 2>&1")
                            .c_str());
        EXPECT_EQ(extract_status, 0) << slurp(extract_log);
    }
}

// Without by_length.csv (extract --queries last) compare writes exactly what it wrote before;
// with it, every other file is byte-identical and the manifest only gains its by_length block
// and one decision.
TEST(CompareByLength, WithoutByLengthNothingChanges) {
    const auto plain = make_extract_folder("by_length_plain");
    const auto with = make_by_length_folder("by_length_with");
    EXPECT_FALSE(read_by_length(read_empirical_run(plain.string())).has_value());
    const fs::path plain_out = compare_into(plain, "by_length_plain_out", "--threads 2");
    const fs::path with_out = compare_into(with, "by_length_with_out", "--threads 2");
    for (const char* file : {"by_length_summary.csv", "regimes_by_length.csv"}) {
        EXPECT_FALSE(fs::exists(plain_out / file)) << file;
        EXPECT_TRUE(fs::exists(with_out / file)) << file;
    }
    int compared = 0;
    for (const auto& entry : fs::directory_iterator(plain_out)) {
        const std::string name = entry.path().filename().string();
        if (name == "manifest.json") continue;
        EXPECT_EQ(slurp(entry.path()), slurp(with_out / name)) << name;
        ++compared;
    }
    EXPECT_GT(compared, 10);
    auto plain_manifest = nlohmann::json::parse(slurp(plain_out / "manifest.json"));
    auto with_manifest = nlohmann::json::parse(slurp(with_out / "manifest.json"));
    EXPECT_FALSE(plain_manifest.contains("by_length"));
    EXPECT_EQ(with_manifest.at("decisions").size(), plain_manifest.at("decisions").size() + 1);
    for (auto* m : {&plain_manifest, &with_manifest})
        for (const char* key : {"timings", "emp", "emp_parameters", "by_length", "decisions",
                                "command", "started", "finished", "host"})
            m->erase(key);
    EXPECT_EQ(plain_manifest.dump(), with_manifest.dump());
}

TEST(CompareByLength, BadFilesExitTwoNamingTheFileAndWriteNothing) {
    struct Breakage {
        std::string name, file;
        std::function<void(const fs::path&)> apply;
    };
    const std::vector<Breakage> cases = {
        {"no_P_mean", "by_length.csv",
         [](const fs::path& d) { drop_column(d / "by_length.csv", "P_mean"); }},
        {"no_regime", "heads_by_length.csv",
         [](const fs::path& d) { drop_column(d / "heads_by_length.csv", "regime"); }},
        {"no_heads_by_length", "heads_by_length.csv",
         [](const fs::path& d) { fs::remove(d / "heads_by_length.csv"); }},
        {"unknown_bin", "by_length.csv",
         [](const fs::path& d) {
             edit_line(d / "by_length.csv", "1,1,22,42,2,", "1,1,22,41,2,9,0.5,0.01,0.5,0.01");
         }},
        {"missing_head", "by_length.csv",
         [](const fs::path& d) { edit_line(d / "by_length.csv", "1,1,43,64,4,", ""); }},
        {"empty_se", "by_length.csv",
         [](const fs::path& d) {
             edit_line(d / "by_length.csv", "0,1,1,21,2,", "0,1,1,21,2,9,0.5,,0.5,0.01");
         }},
        {"N_off_grid", "by_length.csv",
         [](const fs::path& d) {
             edit_line(d / "by_length.csv", "0,0,1,21,4,", "0,0,1,21,3,9,0.5,0.01,0.5,0.01");
         }},
        {"no_length_bins", "manifest.json",
         [](const fs::path& d) {
             auto m = nlohmann::json::parse(slurp(d / "manifest.json"));
             m["parameters"].erase("length_bins");
             put(d / "manifest.json", m.dump(2));
         }},
    };
    for (const Breakage& b : cases) {
        const auto dir = make_by_length_folder("by_length_broken_" + b.name);
        b.apply(dir);
        expect_input_error_in(dir, b.file);
        const fs::path out = scratch() / ("by_length_broken_out_" + b.name);
        fs::remove_all(out);
        const RunResult r = run("compare --emp " + dir.string() + " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << b.name << ": " << r.err;
        EXPECT_NE(r.err.find(b.file), std::string::npos) << b.name << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << b.name << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << b.name;
    }
}

}  // namespace attngeo::compare
