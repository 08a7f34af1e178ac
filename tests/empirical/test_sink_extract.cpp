// extract's attention-sink files (issue 43, docs/design.md §15) end to end on real checkpoints:
// the sink rate and α(0) per head against a plain per-head loop over `capture --queries all`'s
// rows, the massive activations against a plain scan of capture's layer outputs, the run.c engine
// against libtorch, and tinysink's layer-0 sink rate well above stories260K's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "common/safetensors.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using attngeo::test_support::shared_folder;

namespace {

constexpr int kTokens = 64;  // Gu et al. measure the sink rate at T = 64
constexpr int kWindows = 12;
constexpr double kEpsilon = 0.3;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("sink_extract");
}

attngeo::test_support::CliResult attngeo_cli(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// tinysink's text: the first kTokens ids of the first kWindows documents that long.
fs::path tinysink_windows() {
    const fs::path path = scratch() / "tinysink_windows.txt";
    std::ifstream in(shared_folder() / "models" / "tinysink" / "fortunes_tokens.txt");
    std::ofstream out(path);
    std::string line;
    for (int kept = 0; kept < kWindows && std::getline(in, line);) {
        std::istringstream ids(line);
        std::vector<std::string> tokens{std::istream_iterator<std::string>(ids), {}};
        if (tokens.size() < kTokens) continue;
        for (int t = 0; t < kTokens; ++t)
            out << tokens[t] << (t + 1 < kTokens ? ' ' : '\n');
        ++kept;
    }
    return path;
}

// Random token ids after BOS (id 1), as Gu et al.'s random-token sequences.
fs::path random_windows(int vocab) {
    const fs::path path = scratch() / "random_windows.txt";
    std::mt19937 rng(2025);
    std::uniform_int_distribution<int> id(3, vocab - 1);
    std::ofstream out(path);
    for (int w = 0; w < kWindows; ++w)
        for (int t = 0; t < kTokens; ++t)
            out << (t == 0 ? 1 : id(rng)) << (t + 1 < kTokens ? ' ' : '\n');
    return path;
}

fs::path extract(const fs::path& model, const fs::path& windows, const std::string& name) {
    const fs::path out = scratch() / name;
    fs::remove_all(out);
    const auto r = attngeo_cli("extract --model " + model.string() + " --tokens " +
                               windows.string() + " --bos no --context " + std::to_string(kTokens) +
                               " --N pow2 --quiet --out " + out.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
}

fs::path capture(const fs::path& model, const fs::path& windows, const std::string& name) {
    const fs::path out = scratch() / (name + ".safetensors");
    const auto r =
        attngeo_cli("capture --model " + model.string() + " --tokens " + windows.string() +
                    " --queries all --hidden-states --out " + out.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
}

std::vector<float> floats(const attngeo::SafetensorsFile& file, const std::string& name,
                          std::vector<std::int64_t>& shape) {
    const attngeo::HostTensor t = file.get(name);
    shape = t.shape;
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    std::memcpy(values.data(), t.data, values.size() * sizeof(float));
    return values;
}

// α(0) of every (layer, head, window) from capture's rows, one row at a time: [L][H][B].
std::vector<std::vector<std::vector<double>>> plain_sink_attention(const fs::path& captured,
                                                                   int layers) {
    const attngeo::SafetensorsFile file(captured.string());
    std::vector<std::vector<std::vector<double>>> by_layer;
    for (int l = 0; l < layers; ++l) {
        std::vector<std::int64_t> s;  // [B, H, T, T]
        const std::vector<float> a = floats(file, "attentions." + std::to_string(l), s);
        std::vector<std::vector<double>> heads(s[1], std::vector<double>(s[0]));
        for (std::int64_t b = 0; b < s[0]; ++b)
            for (std::int64_t h = 0; h < s[1]; ++h) {
                double sum = 0;
                for (std::int64_t t = 0; t < s[2]; ++t)
                    sum += a[((b * s[1] + h) * s[2] + t) * s[3] + 0];
                heads[h][b] = sum / static_cast<double>(s[2]);
            }
        by_layer.push_back(heads);
    }
    return by_layer;
}

// Checks sinks.csv and sink_layers.csv against the plain loop; returns layer 0's sink rate.
double check_sink_rates(const fs::path& folder, const fs::path& captured, int layers) {
    const auto plain = plain_sink_attention(captured, layers);
    const auto heads = attngeo::read_csv_table((folder / "sinks.csv").string());
    const auto rates = attngeo::read_csv_table((folder / "sink_layers.csv").string());
    double largest = 0, layer0_rate = -1;
    std::size_t row = 0;
    for (int l = 0; l < layers; ++l) {
        double rate = 0;
        const std::size_t H = plain[l].size();
        for (std::size_t h = 0; h < H; ++h, ++row) {
            double mean = 0, above = 0;
            for (double alpha0 : plain[l][h])
                mean += alpha0, above += alpha0 > kEpsilon;
            mean /= kWindows;
            EXPECT_EQ(heads.integer(row, "layer"), l);
            EXPECT_EQ(heads.integer(row, "head"), static_cast<std::int64_t>(h));
            EXPECT_EQ(heads.integer(row, "windows"), kWindows);
            largest = std::max(largest, std::fabs(heads.number(row, "sink_attention") - mean));
            EXPECT_DOUBLE_EQ(heads.number(row, "sink_share"), above / kWindows);
            rate += above / kWindows;
        }
        rate /= static_cast<double>(H);
        EXPECT_NEAR(rates.number(l, "sink_rate"), rate, 1e-12) << "layer " << l;
        if (l == 0) layer0_rate = rate;
    }
    std::printf("%s: α(0) vs capture's rows, largest difference %.3g; layer-0 sink rate %.3f\n",
                folder.filename().c_str(), largest, layer0_rate);
    EXPECT_LT(largest, 1e-5);
    return layer0_rate;
}

// sink_layers.csv's largest |h| per layer against a plain scan of capture's layer outputs.
void check_massive_activations(const fs::path& folder, const fs::path& captured, int layers) {
    const attngeo::SafetensorsFile file(captured.string());
    const auto rates = attngeo::read_csv_table((folder / "sink_layers.csv").string());
    for (int l = 0; l < layers; ++l) {
        std::vector<std::int64_t> s;  // [B, T, hidden]
        const std::vector<float> h = floats(file, "layer_outputs." + std::to_string(l), s);
        double largest = -1;
        std::int64_t at = 0;
        for (std::size_t i = 0; i < h.size(); ++i)
            if (std::fabs(h[i]) > largest)
                largest = std::fabs(h[i]), at = static_cast<std::int64_t>(i);
        const std::int64_t window = at / (s[1] * s[2]), position = at / s[2] % s[1],
                           dim = at % s[2];
        std::printf(
            "layer %d: largest |h| %.6g (extract %.6g) at window %lld position %lld dim %lld\n", l,
            largest, rates.number(l, "largest"), static_cast<long long>(window),
            static_cast<long long>(position), static_cast<long long>(dim));
        EXPECT_NEAR(rates.number(l, "largest"), largest, 1e-4 * largest) << "layer " << l;
        EXPECT_EQ(rates.integer(l, "window"), window);
        EXPECT_EQ(rates.integer(l, "position"), position);
        EXPECT_EQ(rates.integer(l, "dim"), dim);
        EXPECT_EQ(rates.integer(l, "windows"), kWindows);
    }
}

}  // namespace

TEST(SinkExtract, TinysinksLayer0SinkRateIsWellAboveStories260KsAndEqualsAPlainLoop) {
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "tinysink" / "hf" / "model.safetensors");
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "stories260K" / "stories260K.bin");
    const fs::path tinysink = shared_folder() / "models" / "tinysink" / "hf";
    const fs::path stories = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    const fs::path text = tinysink_windows(), random = random_windows(512);
    const fs::path sink_folder = extract(tinysink, text, "tinysink");
    const fs::path sink_capture = capture(tinysink, text, "tinysink");
    const double tinysink_rate = check_sink_rates(sink_folder, sink_capture, 4);
    check_massive_activations(sink_folder, sink_capture, 4);
    const fs::path stories_folder = extract(stories, random, "stories260K");
    const fs::path stories_capture = capture(stories, random, "stories260K");
    const double stories_rate = check_sink_rates(stories_folder, stories_capture, 5);
    check_massive_activations(stories_folder, stories_capture, 5);
    EXPECT_GT(tinysink_rate, stories_rate + 0.3);
}

// The run.c engine (tinysink.bin) and libtorch (hf/) measure the same sinks: α(0), the key-norm
// ratio and the cosines per head, and the massive activations per layer.
TEST(SinkExtract, RunCEngineMeasuresWhatLibtorchMeasures) {
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "tinysink" / "hf" / "model.safetensors");
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "tinysink" / "tinysink.bin");
    const fs::path text = tinysink_windows();
    const fs::path torch = extract(shared_folder() / "models" / "tinysink" / "hf", text, "torch");
    const fs::path runc =
        extract(shared_folder() / "models" / "tinysink" / "tinysink.bin", text, "runc");
    const auto a = attngeo::read_csv_table((torch / "sinks.csv").string());
    const auto b = attngeo::read_csv_table((runc / "sinks.csv").string());
    ASSERT_EQ(a.rows.size(), b.rows.size());
    double largest = 0;
    for (std::size_t r = 0; r < a.rows.size(); ++r)
        for (const char* column :
             {"sink_attention", "key_norm_ratio", "cos_query_sink", "cos_query_rest"})
            largest = std::max(largest, std::fabs(a.number(r, column) - b.number(r, column)));
    const auto la = attngeo::read_csv_table((torch / "sink_layers.csv").string());
    const auto lb = attngeo::read_csv_table((runc / "sink_layers.csv").string());
    for (std::size_t l = 0; l < la.rows.size(); ++l) {
        largest = std::max(largest, std::fabs(la.number(l, "largest") - lb.number(l, "largest")) /
                                        la.number(l, "largest"));
        EXPECT_EQ(la.integer(l, "position"), lb.integer(l, "position"));
        EXPECT_EQ(la.integer(l, "dim"), lb.integer(l, "dim"));
    }
    std::printf("run.c vs libtorch sink measures: largest difference %.3g\n", largest);
    EXPECT_LT(largest, 1e-4);
}
