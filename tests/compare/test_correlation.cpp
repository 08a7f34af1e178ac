// Tests of compare/correlation: Pearson against a textbook one-pass formula, the correlation
// across heads against plain loops, known answers (R linear in ρ0 → 1 with CI [1, 1]),
// invariances of the bootstrap, determinism, and per_doc.safetensors validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "compare/correlation.hpp"

namespace attngeo::compare {
namespace {

// Deterministic pseudo-random values in [0, 1) for test data.
double unit(std::uint64_t i) {
    std::uint64_t z = i * 0x9E3779B97F4A7C15ull + 12345;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

// Arrays where R depends on ρ0 with noise: docs × layers × heads × sizes.
PerDocArrays noisy_arrays(int docs = 9, int layers = 3, int heads = 4) {
    PerDocArrays a;
    a.docs = docs;
    a.layers = layers;
    a.heads = heads;
    a.sizes = {1, 4, 16};
    const int H = layers * heads, S = 3;
    std::uint64_t k = 0;
    for (int d = 0; d < docs; ++d)
        for (int h = 0; h < H; ++h) {
            const double rho0 = 0.1 + 0.05 * h + 0.1 * unit(k++);
            a.rho0.push_back(static_cast<float>(rho0));
            a.lambda.push_back(static_cast<float>(1 + unit(k++)));
            for (int s = 0; s < S; ++s) {
                a.R.push_back(static_cast<float>(0.3 + 0.5 * rho0 * (s + 1) + 0.3 * unit(k++)));
                a.P.push_back(static_cast<float>(0.5 + 0.2 * unit(k++)));
            }
        }
    return a;
}

double textbook_pearson(const std::vector<double>& x, const std::vector<double>& y) {
    const double n = static_cast<double>(x.size());
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        syy += y[i] * y[i];
        sxy += x[i] * y[i];
    }
    return (n * sxy - sx * sy) / std::sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
}

TEST(CompareCorrelation, PearsonMatchesTextbookFormula) {
    double largest = 0;
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> x, y;
        for (int i = 0; i < 5 + trial; ++i) {
            x.push_back(unit(1000 * trial + 2 * i));
            y.push_back(0.3 * x.back() + unit(1000 * trial + 2 * i + 1));
        }
        largest = std::max(largest, std::abs(pearson(x, y) - textbook_pearson(x, y)));
    }
    std::printf("largest |pearson - textbook| = %.3g\n", largest);
    EXPECT_LE(largest, 1e-12);
    EXPECT_TRUE(std::isnan(pearson({1, 2, 3}, {5, 5, 5})));
    EXPECT_TRUE(std::isnan(pearson({1}, {2})));
    EXPECT_THROW(pearson({1, 2}, {1}), std::domain_error);
}

TEST(CompareCorrelation, PointEstimateMatchesPlainLoops) {
    const PerDocArrays a = noisy_arrays();
    const auto rows = recall_rho0_correlation(a, 0, 1);
    const int H = a.layers * a.heads, S = static_cast<int>(a.sizes.size());
    ASSERT_EQ(rows.size(), a.sizes.size());
    double largest = 0;
    for (int s = 0; s < S; ++s) {
        std::vector<double> x(H, 0), y(H, 0);
        for (int h = 0; h < H; ++h) {
            for (int d = 0; d < a.docs; ++d) {
                x[h] += a.R[(static_cast<std::size_t>(d) * H + h) * S + s];
                y[h] += a.rho0[static_cast<std::size_t>(d) * H + h];
            }
            x[h] /= a.docs;
            y[h] /= a.docs;
        }
        largest = std::max(largest, std::abs(rows[s].corr - textbook_pearson(x, y)));
        EXPECT_EQ(rows[s].N, a.sizes[s]);
        EXPECT_EQ(rows[s].heads, H);
        EXPECT_EQ(rows[s].replicates, 0);
        EXPECT_TRUE(std::isnan(rows[s].ci_lo) && std::isnan(rows[s].ci_hi));
        EXPECT_GT(rows[s].corr, 0.5);
    }
    std::printf("largest |corr - plain loops| = %.3g\n", largest);
    EXPECT_LE(largest, 1e-12);
}

TEST(CompareCorrelation, LinearRecallGivesOneWithDegenerateInterval) {
    PerDocArrays a = noisy_arrays();
    const int S = static_cast<int>(a.sizes.size());
    // R = c_s + b_s ρ0 per document, with ρ0 dyadic so every value is exact in float.
    for (std::size_t i = 0; i < a.rho0.size(); ++i) {
        a.rho0[i] = static_cast<float>(std::ldexp(std::floor(unit(7 * i) * 256), -9));
        for (int s = 0; s < S; ++s)
            a.R[i * S + s] = 0.25f + 0.5f * (s + 1) * a.rho0[i];
    }
    const auto rows = recall_rho0_correlation(a, 200, 42);
    for (const auto& r : rows) {
        EXPECT_NEAR(r.corr, 1, 1e-12);
        EXPECT_NEAR(r.ci_lo, 1, 1e-12);
        EXPECT_NEAR(r.ci_hi, 1, 1e-12);
        EXPECT_EQ(r.replicates, 200);
    }
}

TEST(CompareCorrelation, BootstrapInvariances) {
    const PerDocArrays a = noisy_arrays();
    const auto base = recall_rho0_correlation(a, 300, 7);
    PerDocArrays scaled = a, negated = a;
    for (float& v : scaled.rho0)
        v = 2.0f * v + 0.5f;
    for (float& v : negated.rho0)
        v = -v;
    const auto s_rows = recall_rho0_correlation(scaled, 300, 7);
    const auto n_rows = recall_rho0_correlation(negated, 300, 7);
    double largest = 0;
    for (std::size_t s = 0; s < base.size(); ++s) {
        EXPECT_LT(base[s].ci_lo, base[s].corr + 1e-12);
        EXPECT_GT(base[s].ci_hi, base[s].corr - 1e-12);
        EXPECT_LT(base[s].ci_lo, base[s].ci_hi);
        largest = std::max(
            {largest, std::abs(s_rows[s].corr - base[s].corr),
             std::abs(s_rows[s].ci_lo - base[s].ci_lo), std::abs(s_rows[s].ci_hi - base[s].ci_hi),
             std::abs(n_rows[s].corr + base[s].corr), std::abs(n_rows[s].ci_lo + base[s].ci_hi),
             std::abs(n_rows[s].ci_hi + base[s].ci_lo)});
    }
    std::printf("largest invariance difference = %.3g\n", largest);
    EXPECT_LE(largest, 1e-6);  // float rounding of the transformed ρ0
    // Same seed → same bits; another seed → another interval.
    const auto again = recall_rho0_correlation(a, 300, 7);
    const auto other = recall_rho0_correlation(a, 300, 8);
    for (std::size_t s = 0; s < base.size(); ++s) {
        EXPECT_EQ(again[s].ci_lo, base[s].ci_lo);
        EXPECT_EQ(again[s].ci_hi, base[s].ci_hi);
    }
    EXPECT_NE(other[0].ci_lo, base[0].ci_lo);
    const auto threaded = recall_rho0_correlation(a, 300, 7, 3);
    for (std::size_t s = 0; s < base.size(); ++s) {
        EXPECT_EQ(threaded[s].ci_lo, base[s].ci_lo);
        EXPECT_EQ(threaded[s].ci_hi, base[s].ci_hi);
    }
}

TEST(CompareCorrelation, ZeroVarianceIsNan) {
    PerDocArrays a = noisy_arrays();
    for (float& v : a.rho0)
        v = 0.25f;
    const auto rows = recall_rho0_correlation(a, 10, 1);
    for (const auto& r : rows) {
        EXPECT_TRUE(std::isnan(r.corr));
        EXPECT_TRUE(std::isnan(r.ci_lo));
    }
    const auto path = std::filesystem::temp_directory_path() / "attngeo_test_corr_rho0.csv";
    write_correlation_csv(rows, path.string());
    std::ifstream in(path);
    std::string header, first;
    std::getline(in, header);
    std::getline(in, first);
    EXPECT_EQ(header,
              "N,heads,corr,ci_lo,ci_hi,replicates,head_lo,head_hi,partial_layer,partial_lo,"
              "partial_hi");
    EXPECT_EQ(first, "1,12,,,,10,,,,,");  // undefined values are empty fields, never nan
    std::filesystem::remove(path);
    EXPECT_THROW(recall_rho0_correlation(a, -1, 1), std::domain_error);
}

TEST(CompareCorrelation, GroupsCorrelateOncePerKeyValueHead) {
    // Two query heads per key/value head, as in a GQA model: the group's ρ0 is shared.
    PerDocArrays a = noisy_arrays(9, 3, 4);
    const int H = a.layers * a.heads, S = static_cast<int>(a.sizes.size()), group = 2;
    for (int d = 0; d < a.docs; ++d)
        for (int h = 1; h < H; h += group)
            a.rho0[static_cast<std::size_t>(d) * H + h] =
                a.rho0[static_cast<std::size_t>(d) * H + h - 1];
    const auto grouped = recall_rho0_correlation(a, 0, 1, 1, group);
    double largest = 0;
    for (int s = 0; s < S; ++s) {
        // Plain reference: document means per head, then R averaged over the group.
        std::vector<double> x(H / group, 0), y(H / group, 0);
        for (int h = 0; h < H; ++h)
            for (int d = 0; d < a.docs; ++d) {
                const std::size_t cell = static_cast<std::size_t>(d) * H + h;
                x[h / group] += static_cast<double>(a.R[cell * S + s]) / (a.docs * group);
                y[h / group] += static_cast<double>(a.rho0[cell]) / (a.docs * group);
            }
        largest = std::max(largest, std::abs(grouped[s].corr - textbook_pearson(x, y)));
        EXPECT_EQ(grouped[s].heads, H / group);
    }
    std::printf("largest |grouped corr - plain loops| = %.3g\n", largest);
    EXPECT_LE(largest, 1e-12);
    // group = 1 is the per-query-head correlation, bit for bit, bootstrap included.
    const auto plain = recall_rho0_correlation(a, 50, 3),
               one = recall_rho0_correlation(a, 50, 3, 1, 1);
    for (int s = 0; s < S; ++s) {
        EXPECT_EQ(plain[s].corr, one[s].corr);
        EXPECT_EQ(plain[s].ci_lo, one[s].ci_lo);
        EXPECT_EQ(plain[s].heads, H);
    }
    EXPECT_THROW(recall_rho0_correlation(a, 10, 1, 1, 3), std::domain_error);  // 3 ∤ 4
    EXPECT_THROW(recall_rho0_correlation(a, 10, 1, 1, 0), std::domain_error);
}

TEST(CompareCorrelation, OneDocumentHasAPointEstimateButNoInterval) {
    const PerDocArrays a = noisy_arrays(1);
    const auto rows = recall_rho0_correlation(a, 100, 5);
    const auto point = recall_rho0_correlation(a, 0, 5);
    for (std::size_t s = 0; s < rows.size(); ++s) {
        EXPECT_EQ(rows[s].corr, point[s].corr);
        EXPECT_TRUE(std::isfinite(rows[s].corr));
        EXPECT_TRUE(std::isnan(rows[s].ci_lo) && std::isnan(rows[s].ci_hi));
        EXPECT_EQ(rows[s].replicates, 0);  // no resample drawn
    }
    EXPECT_NE(bootstrap_note(1).find("needs >= 2 documents"), std::string::npos);
    EXPECT_EQ(bootstrap_note(2), "");
    // Two documents bootstrap again.
    const auto two = recall_rho0_correlation(noisy_arrays(2), 100, 5);
    EXPECT_EQ(two[0].replicates, 100);
}

// ---- per_doc.safetensors

HostTensor tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape) {
    std::size_t numel = 1;
    for (auto d : shape)
        numel *= static_cast<std::size_t>(d);
    auto bytes = std::make_shared<std::vector<unsigned char>>(numel * dtype_size(dtype), 0);
    HostTensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data = bytes->data();
    t.bytes = bytes->size();
    t.owner = std::shared_ptr<const void>(bytes, bytes->data());
    return t;
}

HostTensor float_tensor(const std::string& name, std::vector<std::int64_t> shape, float start) {
    HostTensor t = tensor(name, DType::F32, std::move(shape));
    auto* p = static_cast<float*>(const_cast<void*>(t.data));
    for (std::int64_t i = 0; i < t.numel(); ++i)
        p[i] = start + 0.125f * i;
    return t;
}

HostTensor sizes_tensor(std::vector<std::int64_t> values, DType dtype = DType::I64) {
    HostTensor t = tensor("N", dtype, {static_cast<std::int64_t>(values.size())});
    if (dtype == DType::I64)
        std::memcpy(const_cast<void*>(t.data), values.data(), values.size() * 8);
    return t;
}

std::vector<HostTensor> good_tensors() {
    return {float_tensor("P", {2, 3, 4, 5}, 0),
            float_tensor("R", {2, 3, 4, 5}, 1),
            float_tensor("rho0", {2, 3, 4}, 2),
            float_tensor("lambda", {2, 3, 4}, 3),
            sizes_tensor({1, 2, 4, 8, 16}),
            float_tensor("cos_by_lag", {2, 3, 4, 6}, 0),
            float_tensor("alpha", {2, 3, 4, 8}, 0),
            float_tensor("C", {2, 3, 4}, 1),
            float_tensor("m_sink", {2, 3, 4}, 4),
            float_tensor("m_last", {2, 3, 4}, 5),
            float_tensor("m_rest", {2, 3, 4}, 6),
            float_tensor("Fmax", {2, 3, 4, 5}, 7),
            float_tensor("Fmin", {2, 3, 4, 5}, 8),
            float_tensor("cos_s_v0", {2, 3, 4, 5}, -1),
            float_tensor("cos_s_vL", {2, 3, 4, 5}, -2)};
}

std::string expect_input_error(const std::string& path, const std::vector<std::string>& needles) {
    try {
        read_per_doc(path);
    } catch (const InputError& e) {
        const std::string message = e.what();
        for (const auto& needle : needles)
            EXPECT_NE(message.find(needle), std::string::npos) << message << " lacks " << needle;
        return message;
    }
    ADD_FAILURE() << "no InputError for " << path;
    return "";
}

TEST(CompareCorrelation, ReadPerDoc) {
    const auto dir = std::filesystem::temp_directory_path() / "attngeo_test_per_doc";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "per_doc.safetensors").string();
    write_safetensors(path, good_tensors());
    const PerDocArrays a = read_per_doc(path);
    EXPECT_EQ(a.docs, 2);
    EXPECT_EQ(a.layers, 3);
    EXPECT_EQ(a.heads, 4);
    EXPECT_EQ(a.sizes, (std::vector<int>{1, 2, 4, 8, 16}));
    ASSERT_EQ(a.R.size(), 120u);
    EXPECT_EQ(a.R[7], 1 + 0.125f * 7);
    EXPECT_EQ(a.lambda[23], 3 + 0.125f * 23);
    EXPECT_EQ(a.max_lag, 6);
    EXPECT_EQ(a.context, 8);
    ASSERT_EQ(a.cos_by_lag.size(), 144u);
    EXPECT_EQ(a.cos_by_lag[143], 0.125f * 143);
    ASSERT_EQ(a.alpha.size(), 192u);
    EXPECT_EQ(a.C[5], 1 + 0.125f * 5);
    // The claims' arrays, each the file's tensor element for element.
    struct Claim {
        const std::vector<float>* values;
        float start;
        std::size_t size;  // D·L·H, or D·L·H·S
    };
    for (const Claim& c : {Claim{&a.m_sink, 4, 24}, Claim{&a.m_last, 5, 24},
                           Claim{&a.m_rest, 6, 24}, Claim{&a.Fmax, 7, 120}, Claim{&a.Fmin, 8, 120},
                           Claim{&a.cos_s_v0, -1, 120}, Claim{&a.cos_s_vL, -2, 120}}) {
        ASSERT_EQ(c.values->size(), c.size);
        for (std::size_t i = 0; i < c.size; ++i)
            ASSERT_EQ((*c.values)[i], c.start + 0.125f * i) << i;
    }

    auto with = [&](const std::string& name, const HostTensor& replacement) {
        std::vector<HostTensor> tensors;
        for (auto& t : good_tensors())
            if (t.name != name) tensors.push_back(t);
        if (replacement.data) tensors.push_back(replacement);
        write_safetensors(path, tensors);
    };
    with("lambda", HostTensor{});
    expect_input_error(path, {path, "lambda", "missing"});
    with("R", float_tensor("R", {2, 3, 4, 6}, 0));
    std::printf("%s\n",
                expect_input_error(path, {path, "\"R\"", "[2, 3, 4, 6]", "[2, 3, 4, 5]"}).c_str());
    with("P", tensor("P", DType::F64, {2, 3, 4, 5}));
    expect_input_error(path, {path, "\"P\"", "F64"});
    with("N", sizes_tensor({1, 2, 4, 8, 16}, DType::I32));
    expect_input_error(path, {path, "\"N\"", "I32"});
    with("rho0", float_tensor("rho0", {2, 3}, 0));
    expect_input_error(path, {path, "rho0", "[2, 3]"});
    with("lambda", float_tensor("lambda", {2, 3, 5}, 0));
    expect_input_error(path, {path, "lambda", "[2, 3, 5]", "[2, 3, 4]"});
    with("N", sizes_tensor({1, 0, 4, 8, 16}));
    expect_input_error(path, {path, "\"N\""});
    // The fit intervals' arrays are part of the file, not optional.
    with("cos_by_lag", HostTensor{});
    expect_input_error(path, {path, "cos_by_lag", "missing"});
    with("alpha", float_tensor("alpha", {2, 3, 5, 8}, 0));
    expect_input_error(path, {path, "alpha", "[2, 3, 5, 8]", "[2, 3, 4, 8]"});
    with("C", HostTensor{});
    expect_input_error(path, {path, "\"C\"", "missing"});
    // So are the claims' arrays: missing, of another dtype or shape, each is one line naming
    // the file, the tensor and the shape expected.
    for (const char* name : {"m_sink", "m_last", "m_rest"}) {
        with(name, HostTensor{});
        const std::string message =
            expect_input_error(path, {path, "\"" + std::string(name) + "\"", "[2, 3, 4]"});
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        with(name, float_tensor(name, {2, 3, 4, 1}, 0));
        expect_input_error(path, {path, name, "[2, 3, 4, 1]", "[2, 3, 4]"});
    }
    for (const char* name : {"Fmax", "Fmin", "cos_s_v0", "cos_s_vL"}) {
        with(name, HostTensor{});
        std::printf("%s\n", expect_input_error(path, {path, "\"" + std::string(name) + "\"",
                                                      "missing", "[2, 3, 4, 5]"})
                                .c_str());
        with(name, float_tensor(name, {2, 3, 4, 4}, 0));
        expect_input_error(path, {path, name, "[2, 3, 4, 4]", "[2, 3, 4, 5]"});
        with(name, tensor(name, DType::F64, {2, 3, 4, 5}));
        expect_input_error(path, {path, name, "F64"});
    }
    EXPECT_THROW(read_per_doc((dir / "absent.safetensors").string()), InputError);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attngeo::compare
