// Tests of the safetensors reader and writer: round trips for every dtype, the golden
// checkpoints compared with an independent decode, one hand-built file per malformed class,
// sharded folders, and the refusal of pickle checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/safetensors.hpp"
#include "common/tensor_store.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace {

using attngeo::test_support::expect_input_error;
using attngeo::test_support::shared_folder;
using attngeo::test_support::shared_required;

namespace fs = std::filesystem;
using attngeo::InputError;
using namespace attngeo;

// One scratch folder per process (CTest runs tests in parallel processes), removed at exit.
const fs::path& scratch() {
    static const fs::path folder = attngeo::test_support::scratch_folder("safetensors");
    return folder;
}

class ScratchCleanup : public ::testing::Environment {
  public:
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(scratch(), ignored);
    }
};
::testing::Environment* const cleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

fs::path write_bytes(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

std::string le64(std::uint64_t value) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
    return out;
}

// A safetensors file as bytes: length prefix, header text as given (no padding), data.
std::string file_bytes(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

// Writes a hand-built file into the scratch folder and returns its path.
std::string hand_file(const std::string& name, const std::string& header,
                      const std::string& data = std::string()) {
    return write_bytes(scratch() / name, file_bytes(header, data)).string();
}

void expect_file_error(const std::string& path, const std::vector<std::string>& phrases) {
    std::vector<std::string> all = {"'" + path + "'"};
    all.insert(all.end(), phrases.begin(), phrases.end());
    EXPECT_THROW(SafetensorsFile{path}, InputError);
    expect_input_error([&] { SafetensorsFile file(path); }, all);
}

HostTensor make_tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape,
                       const std::vector<unsigned char>& bytes) {
    HostTensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    auto buffer = std::make_shared<std::vector<unsigned char>>(bytes);
    t.data = buffer->data();
    t.bytes = buffer->size();
    t.owner = buffer;
    return t;
}

std::vector<unsigned char> pattern(std::size_t count, unsigned seed) {
    std::vector<unsigned char> out(count);
    for (std::size_t i = 0; i < count; ++i)
        out[i] = static_cast<unsigned char>(i * 37 + seed * 11);
    return out;
}

std::vector<unsigned char> float_bytes(const std::vector<float>& values) {
    std::vector<unsigned char> out(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

// ------------------------------------------------------------------------------------------
// Round trips

TEST(Safetensors, RoundTripEveryDtypeBytesIdentical) {
    const std::vector<std::pair<DType, std::vector<std::int64_t>>> cases = {
        {DType::F64, {2, 3}}, {DType::F32, {5}}, {DType::F16, {3, 1, 2}}, {DType::BF16, {7}},
        {DType::I64, {2, 2}}, {DType::I32, {}},  {DType::I16, {0, 4}},    {DType::I8, {9}},
        {DType::U8, {3, 3}},  {DType::BOOL, {4}}};
    std::vector<HostTensor> tensors;
    unsigned seed = 1;
    for (const auto& [dtype, shape] : cases) {
        std::size_t numel = 1;
        for (auto s : shape)
            numel *= static_cast<std::size_t>(s);
        auto bytes = pattern(numel * dtype_size(dtype), seed++);
        if (dtype == DType::BOOL) {
            for (auto& b : bytes)
                b &= 1;
        }
        tensors.push_back(make_tensor(std::string("t.") + to_string(dtype), dtype, shape, bytes));
    }
    const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                         {"note", "quote \" and é"}};
    const std::string path = (scratch() / "round_trip.safetensors").string();
    write_safetensors(path, tensors, metadata);

    SafetensorsFile file(path);
    EXPECT_EQ(file.metadata(), metadata);
    EXPECT_EQ(file.names().size(), tensors.size());
    std::size_t data_total = 0;
    for (const auto& expected : tensors) {
        ASSERT_TRUE(file.contains(expected.name)) << expected.name;
        const HostTensor got = file.get(expected.name);
        EXPECT_EQ(got.name, expected.name);
        EXPECT_EQ(got.file, path);
        EXPECT_EQ(got.dtype, expected.dtype) << expected.name;
        EXPECT_EQ(got.shape, expected.shape) << expected.name;
        ASSERT_EQ(got.bytes, expected.bytes) << expected.name;
        EXPECT_EQ(got.numel(), expected.numel());
        if (got.bytes > 0) {
            EXPECT_EQ(std::memcmp(got.data, expected.data, got.bytes), 0) << expected.name;
        }
        data_total += expected.bytes;
    }
    // The layout the reference writer produces: header padded with spaces to 8 bytes, data
    // contiguous in the given order right after it.
    const std::string raw = attngeo::test_support::slurp(path);
    std::uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i)
        header_bytes = (header_bytes << 8) | (unsigned char)raw[i];
    EXPECT_EQ(header_bytes % 8, 0u);
    EXPECT_EQ(raw.size(), 8 + header_bytes + data_total);
    const std::string header = raw.substr(8, header_bytes);
    EXPECT_EQ(header.find("{\"__metadata__\":"), 0u) << header;
    const auto last_brace = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', last_brace + 1), std::string::npos);
    EXPECT_LT(header.find("\"t.F64\""), header.find("\"t.BOOL\""));
    // Nothing left behind by the temp-file protocol.
    for (const auto& item : fs::directory_iterator(scratch())) {
        EXPECT_EQ(item.path().filename().string().find(".tmp."), std::string::npos);
    }
}

TEST(Safetensors, WriterHeaderMatchesReferenceBytes) {
    // What safetensors.torch.save_file({"a": torch.tensor([1., 2.])}, metadata={"format":"pt"})
    // writes: compact JSON, dtype/shape/data_offsets in that order, spaces to a multiple of 8.
    const std::string path = (scratch() / "reference_layout.safetensors").string();
    write_safetensors(path, {make_tensor("a", DType::F32, {2}, float_bytes({1.0f, 2.0f}))},
                      {{"format", "pt"}});
    std::string header =
        R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string data(8, '\0');
    const float values[2] = {1.0f, 2.0f};
    std::memcpy(&data[0], values, 8);
    EXPECT_EQ(attngeo::test_support::slurp(path), file_bytes(header, data));
}

TEST(Safetensors, HalfAndBfloat16DecodeThroughTheFile) {
    // 1.0, -2.0, 65504 (largest half), 2^-24 (smallest subnormal half)
    const std::vector<std::uint16_t> half = {0x3c00, 0xc000, 0x7bff, 0x0001};
    // 1.0, -2.0, 3.140625, 1e38-ish
    const std::vector<std::uint16_t> bf16 = {0x3f80, 0xc000, 0x4049, 0x7e96};
    auto as_bytes = [](const std::vector<std::uint16_t>& v) {
        std::vector<unsigned char> out(v.size() * 2);
        for (std::size_t i = 0; i < v.size(); ++i) {
            out[2 * i] = v[i] & 0xff;
            out[2 * i + 1] = v[i] >> 8;
        }
        return out;
    };
    const std::string path = (scratch() / "half.safetensors").string();
    write_safetensors(path, {make_tensor("h", DType::F16, {4}, as_bytes(half)),
                             make_tensor("b", DType::BF16, {2, 2}, as_bytes(bf16))});
    SafetensorsFile file(path);
    const HostTensor h = file.get("h"), b = file.get("b");
    const auto* hb = static_cast<const unsigned char*>(h.data);
    const auto* bb = static_cast<const unsigned char*>(b.data);
    std::vector<float> hv, bv;
    for (int i = 0; i < 4; ++i) {
        hv.push_back(half_to_float(static_cast<std::uint16_t>(hb[2 * i] | hb[2 * i + 1] << 8)));
        bv.push_back(bfloat16_to_float(static_cast<std::uint16_t>(bb[2 * i] | bb[2 * i + 1] << 8)));
    }
    EXPECT_EQ(hv, (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)}));
    EXPECT_EQ(bv, (std::vector<float>{1.0f, -2.0f, 3.140625f, 0x1.2cp+126f}));
}

TEST(Safetensors, TensorsOutliveTheFileObject) {
    const std::string path = (scratch() / "outlive.safetensors").string();
    write_safetensors(path, {make_tensor("x", DType::F32, {3}, float_bytes({1.5f, -2.5f, 4.0f}))});
    HostTensor kept;
    {
        SafetensorsFile file(path);
        kept = file.get("x");
    }
    fs::remove(path);  // the mapping survives the unlink as well
    float values[3];
    std::memcpy(values, kept.data, sizeof values);
    EXPECT_EQ(values[0], 1.5f);
    EXPECT_EQ(values[1], -2.5f);
    EXPECT_EQ(values[2], 4.0f);
}

TEST(Safetensors, UnalignedDataIsReadCorrectly) {
    // Header of 13 bytes (not padded): the F64 begins at file offset 21, unaligned for its
    // type. HostTensor::data points into the map as is; elements are read with memcpy.
    const std::string header = R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
    ASSERT_NE((8 + header.size()) % 8, 0u);
    std::string data(8, '\0');
    const double value = -1234.5678;
    std::memcpy(&data[0], &value, 8);
    const std::string path = hand_file("unaligned.safetensors", header, data);
    SafetensorsFile file(path);
    const HostTensor t = file.get("a");
    EXPECT_NE(reinterpret_cast<std::uintptr_t>(t.data) % 8, 0u);
    double got = 0;
    std::memcpy(&got, t.data, 8);
    EXPECT_EQ(got, value);
}

TEST(Safetensors, EmptyHeaderScalarsAndEmptyTensorsAreValid) {
    EXPECT_TRUE(SafetensorsFile(hand_file("empty_header.safetensors", "{}")).names().empty());
    const std::string header =
        R"({"s":{"dtype":"I32","shape":[],"data_offsets":[0,4]},)"
        R"("z":{"dtype":"F32","shape":[0,5],"data_offsets":[2,2]},"w":{"dtype":"U8","shape":[2],)"
        R"("data_offsets":[6,8]}, "__metadata__": {}})";
    SafetensorsFile file(
        hand_file("scalars.safetensors", header, std::string("\x07\0\0\0ab\x01\x02", 8)));
    EXPECT_EQ(file.names(), (std::vector<std::string>{"s", "w", "z"}));
    EXPECT_EQ(file.get("s").numel(), 1);
    EXPECT_EQ(file.get("z").bytes, 0u);
    EXPECT_EQ(static_cast<const unsigned char*>(file.get("w").data)[1], 2);
    EXPECT_TRUE(file.metadata().empty());
}

TEST(Safetensors, WriterRejectsInconsistentTensorsAndUnwritablePaths) {
    const std::string path = (scratch() / "bad_write.safetensors").string();
    auto ok = make_tensor("a", DType::F32, {2}, float_bytes({1, 2}));
    EXPECT_THROW(write_safetensors(path, {ok, ok}), std::invalid_argument);
    auto wrong_bytes = make_tensor("b", DType::F32, {3}, float_bytes({1, 2}));
    EXPECT_THROW(write_safetensors(path, {wrong_bytes}), std::invalid_argument);
    auto reserved = make_tensor("__metadata__", DType::F32, {2}, float_bytes({1, 2}));
    EXPECT_THROW(write_safetensors(path, {reserved}), std::invalid_argument);
    EXPECT_FALSE(fs::exists(path));
    const std::string unwritable = (scratch() / "no_such_folder" / "x.safetensors").string();
    expect_input_error([&] { write_safetensors(unwritable, {ok}); }, {unwritable, "cannot write"});
}

// ------------------------------------------------------------------------------------------
// Golden files from the shared folder

#define REQUIRE_GOLDEN(golden)                                                                  \
    const fs::path golden = shared_folder() / "golden";                                         \
    if (!fs::is_directory(golden)) {                                                            \
        if (shared_required()) {                                                                \
            FAIL() << "shared folder " << golden << " not found (ATTNGEO_REQUIRE_SHARED=1)";    \
        }                                                                                       \
        GTEST_SKIP() << "shared golden folder " << golden                                       \
                     << " not found; set ATTNGEO_SHARED to the shared folder to run this test"; \
    }

// Independent reading: parse the header with plain nlohmann and read the bytes with ifstream.
struct IndependentTensor {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::string bytes;
};
std::map<std::string, IndependentTensor> independent_decode(const fs::path& path) {
    const std::string raw = attngeo::test_support::slurp(path);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(raw[i]);
    const auto header = nlohmann::json::parse(raw.substr(8, n));
    std::map<std::string, IndependentTensor> out;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        IndependentTensor t;
        t.dtype = entry["dtype"].get<std::string>();
        t.shape = entry["shape"].get<std::vector<std::int64_t>>();
        const auto begin = entry["data_offsets"][0].get<std::size_t>();
        const auto end = entry["data_offsets"][1].get<std::size_t>();
        t.bytes = raw.substr(8 + n + begin, end - begin);
        out[name] = t;
    }
    return out;
}

TEST(SafetensorsGolden, EveryFileMatchesAnIndependentDecode) {
    REQUIRE_GOLDEN(golden);
    int files = 0;
    for (const auto& folder : fs::directory_iterator(golden)) {
        for (const char* name : {"model.safetensors", "golden.safetensors"}) {
            const fs::path path = folder.path() / name;
            if (!fs::exists(path)) continue;
            ++files;
            SafetensorsFile file(path.string());
            const auto expected = independent_decode(path);
            EXPECT_EQ(file.names().size(), expected.size()) << path;
            EXPECT_EQ(file.metadata().at("format"), "pt") << path;
            for (const auto& [tensor_name, want] : expected) {
                const HostTensor got = file.get(tensor_name);
                EXPECT_EQ(to_string(got.dtype), want.dtype) << path << " " << tensor_name;
                EXPECT_EQ(got.shape, want.shape) << path << " " << tensor_name;
                ASSERT_EQ(got.bytes, want.bytes.size()) << path << " " << tensor_name;
                EXPECT_EQ(std::memcmp(got.data, want.bytes.data(), got.bytes), 0)
                    << path << " " << tensor_name;
            }
        }
        if (fs::exists(folder.path() / "model.safetensors")) {
            SafetensorsCheckpoint checkpoint(folder.path().string());
            EXPECT_EQ(checkpoint.files().size(), 1u);
            EXPECT_FALSE(checkpoint.names().empty());
        }
    }
    EXPECT_GE(files, 16) << "expected model and golden files in 8 golden folders";
}

TEST(SafetensorsGolden, SpotValuesOfLlamaGqaAndBf16) {
    REQUIRE_GOLDEN(golden);
    // Values below were read from the files with Python's struct module.
    SafetensorsFile outputs((golden / "llama-gqa" / "golden.safetensors").string());
    const HostTensor ids = outputs.get("input_ids");
    EXPECT_EQ(ids.dtype, DType::I64);
    EXPECT_EQ(ids.shape, (std::vector<std::int64_t>{2, 16}));
    std::vector<std::int64_t> id_values(32);
    ASSERT_EQ(ids.bytes, 32 * sizeof(std::int64_t));
    std::memcpy(id_values.data(), ids.data, ids.bytes);
    EXPECT_EQ(id_values[0], 47);
    EXPECT_EQ(id_values[1], 211);
    EXPECT_EQ(id_values[2], 38);
    EXPECT_EQ(id_values[16], 236);
    EXPECT_EQ(id_values[31], 50);
    const HostTensor logits = outputs.get("logits");
    EXPECT_EQ(logits.shape, (std::vector<std::int64_t>{2, 16, 256}));
    std::uint32_t logit_bits[3];
    std::memcpy(logit_bits, logits.data, sizeof logit_bits);
    EXPECT_EQ(logit_bits[0], 0xbd3b0b4du);
    EXPECT_EQ(logit_bits[1], 0x40c39823u);
    EXPECT_EQ(logit_bits[2], 0x3f05c409u);

    SafetensorsCheckpoint bf16((golden / "llama-bf16").string());
    const HostTensor embed = bf16.get("model.embed_tokens.weight");
    EXPECT_EQ(embed.dtype, DType::BF16);
    EXPECT_EQ(embed.shape, (std::vector<std::int64_t>{256, 64}));
    const auto* b = static_cast<const unsigned char*>(embed.data);
    std::vector<float> values;
    for (int i = 0; i < 4; ++i) {
        values.push_back(
            bfloat16_to_float(static_cast<std::uint16_t>(b[2 * i] | b[2 * i + 1] << 8)));
    }
    EXPECT_EQ(values,
              (std::vector<float>{0.1474609375f, 0.146484375f, -0.1923828125f, -0.15234375f}));
    expect_input_error([&] { bf16.get("model.no_such.weight"); },
                       {"model.safetensors'", "no tensor 'model.no_such.weight'"});
}

// ------------------------------------------------------------------------------------------
// Malformed files: one test per class

const std::string kGoodEntry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kEightBytes(8, '\0');

TEST(SafetensorsMalformed, MissingFileAndFolder) {
    const std::string missing = (scratch() / "does_not_exist.safetensors").string();
    expect_file_error(missing, {"no such file"});
    fs::create_directories(scratch() / "a_folder");
    expect_file_error((scratch() / "a_folder").string(), {"is a folder"});
}

TEST(SafetensorsMalformed, ShorterThanEightBytes) {
    expect_file_error(
        write_bytes(scratch() / "short.safetensors", std::string("\x05\0\0", 3)).string(),
        {"shorter than 8 bytes"});
    expect_file_error(write_bytes(scratch() / "zero.safetensors", "").string(),
                      {"file is 0 bytes"});
}

TEST(SafetensorsMalformed, HeaderLengthBeyondFile) {
    const std::string path =
        write_bytes(scratch() / "beyond.safetensors", le64(1000) + "{}").string();
    expect_file_error(path, {"header length 1000", "beyond the end of the file"});
    // Exactly one byte short.
    const std::string header = "{\"a\":" + kGoodEntry + "}";
    expect_file_error(
        write_bytes(scratch() / "one_short.safetensors", le64(header.size() + 1) + header).string(),
        {"beyond the end of the file"});
}

TEST(SafetensorsMalformed, HeaderLengthAbsurd) {
    expect_file_error(
        write_bytes(scratch() / "absurd.safetensors", le64(100'000'001) + "{}").string(),
        {"absurdly large"});
    expect_file_error(
        write_bytes(scratch() / "absurd_max.safetensors", le64(~0ull) + "{}").string(),
        {"absurdly large"});
}

TEST(SafetensorsMalformed, HeaderNotJson) {
    expect_file_error(hand_file("not_json.safetensors", "{\"a\": "), {"not valid JSON"});
    expect_file_error(hand_file("trailing.safetensors", "{} x"), {"not valid JSON"});
    expect_file_error(hand_file("empty.safetensors", ""), {"not valid JSON"});
    expect_file_error(hand_file("bad_utf8.safetensors", "{\"\xff\": 1}"), {"not valid JSON"});
    expect_file_error(hand_file("newline.safetensors", "{\n\n\"a\"\n:\n"), {"not valid JSON"});
}

TEST(SafetensorsMalformed, HeaderNotObject) {
    expect_file_error(hand_file("array.safetensors", "[1, 2]"), {"not a JSON object"});
    expect_file_error(hand_file("string.safetensors", "\"a\""), {"not a JSON object"});
}

TEST(SafetensorsMalformed, DuplicateTensorName) {
    expect_file_error(hand_file("duplicate.safetensors",
                                "{\"a\":" + kGoodEntry + ",\"a\":" + kGoodEntry + "}", kEightBytes),
                      {"tensor 'a'", "appears twice"});
}

TEST(SafetensorsMalformed, EntryNotObject) {
    expect_file_error(hand_file("entry_number.safetensors", R"({"w": 3})"),
                      {"tensor 'w'", "expected an object"});
    expect_file_error(hand_file("entry_list.safetensors", R"({"w": ["F32", [2], [0, 8]]})"),
                      {"tensor 'w'", "expected an object"});
}

TEST(SafetensorsMalformed, EntryLacksField) {
    expect_file_error(hand_file("no_dtype.safetensors",
                                R"({"w":{"shape":[2],"data_offsets":[0,8]}})", kEightBytes),
                      {"tensor 'w'", "lacks \"dtype\""});
    expect_file_error(hand_file("no_shape.safetensors",
                                R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", kEightBytes),
                      {"tensor 'w'", "lacks \"shape\""});
    expect_file_error(
        hand_file("no_offsets.safetensors", R"({"w":{"dtype":"F32","shape":[2]}})", kEightBytes),
        {"tensor 'w'", "lacks \"data_offsets\""});
}

TEST(SafetensorsMalformed, UnknownDtype) {
    expect_file_error(
        hand_file("fp8.safetensors",
                  R"({"w":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", kEightBytes),
        {"tensor 'w'", "unknown dtype \"F8_E4M3\"", "F64 F32 F16 BF16"});
    expect_file_error(
        hand_file("lower.safetensors", R"({"w":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})",
                  kEightBytes),
        {"unknown dtype"});
    expect_file_error(
        hand_file("dtype_number.safetensors",
                  R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", kEightBytes),
        {"unknown dtype"});
}

TEST(SafetensorsMalformed, BadShape) {
    for (const std::string shape :
         {"[2,-1]", "[2.0]", "\"2\"", "[[2]]", "2", "[true]", "null", "[9223372036854775808]"}) {
        expect_file_error(
            hand_file("shape.safetensors",
                      R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]}})",
                      kEightBytes),
            {"tensor 'w'", "not a list of non-negative integers"});
    }
}

TEST(SafetensorsMalformed, BadDataOffsets) {
    for (const std::string offsets :
         {"[8,0]", "[0]", "[0,8,8]", "[0,-8]", "[0.0,8]", "\"0,8\"", "{\"begin\":0}", "[]"}) {
        expect_file_error(
            hand_file("offsets.safetensors",
                      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}}",
                      kEightBytes),
            {"tensor 'w'", "data_offsets", "begin <= end"});
    }
}

TEST(SafetensorsMalformed, EndBeyondDataRegion) {
    expect_file_error(
        hand_file("truncated.safetensors",
                  R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kEightBytes),
        {"tensor 'w'", "end 16 is beyond the data region (8 bytes"});
}

TEST(SafetensorsMalformed, ByteCountMismatch) {
    expect_file_error(
        hand_file("mismatch.safetensors",
                  R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kEightBytes),
        {"tensor 'w'", "span 8 bytes", "shape [3] of F32 needs 12 bytes"});
    expect_file_error(
        hand_file("mismatch_bf16.safetensors",
                  R"({"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,4]}})", kEightBytes),
        {"tensor 'w'", "needs 8 bytes"});
    // numel · size wraps around 2^64 to 0: must not pass as an empty tensor.
    expect_file_error(
        hand_file("overflow.safetensors",
                  R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})"),
        {"tensor 'w'", "too large"});
}

TEST(SafetensorsMalformed, OverlappingTensors) {
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    expect_file_error(hand_file("overlap.safetensors", header, std::string(12, '\0')),
                      {"'a' [0, 8)", "'b' [4, 12)", "overlap"});
    // Contained inside a longer tensor that starts earlier, with one between them.
    const std::string nested = R"({"long":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                               R"("mid":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                               R"("late":{"dtype":"U8","shape":[2],"data_offsets":[10,12]}})";
    expect_file_error(hand_file("nested.safetensors", nested, std::string(16, '\0')), {"overlap"});
    // Same range twice.
    const std::string same = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
    expect_file_error(hand_file("same.safetensors", same, std::string(4, '\0')), {"overlap"});
    // Touching ranges, gaps and empty tensors are fine.
    const std::string fine = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                             R"("c":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}})";
    EXPECT_EQ(
        SafetensorsFile(hand_file("fine.safetensors", fine, std::string(10, '\0'))).names().size(),
        4u);
}

TEST(SafetensorsMalformed, MetadataNotObjectOfStrings) {
    expect_file_error(hand_file("meta_string.safetensors", R"({"__metadata__":"pt"})"),
                      {"\"__metadata__\"", "expected an object of strings"});
    expect_file_error(
        hand_file("meta_number.safetensors", R"({"__metadata__":{"format":"pt","epochs":3}})"),
        {"\"__metadata__\" entry 'epochs'", "expected an object of strings"});
}

TEST(SafetensorsMalformed, GetMissingTensor) {
    const std::string path =
        hand_file("one.safetensors", "{\"a\":" + kGoodEntry + "}", kEightBytes);
    SafetensorsFile file(path);
    EXPECT_FALSE(file.contains("b"));
    EXPECT_THROW(file.get("b"), InputError);
    expect_input_error([&] { file.get("b"); }, {"'" + path + "': no tensor 'b'"});
}

// ------------------------------------------------------------------------------------------
// Folders: sharded checkpoints and pickles

// Two shards: "a" and "b" in the first, "c" in the second; the index as given.
fs::path sharded_folder(const std::string& name, const std::string& weight_map) {
    const fs::path folder = scratch() / name;
    fs::create_directories(folder);
    write_safetensors((folder / "model-00001-of-00002.safetensors").string(),
                      {make_tensor("a", DType::F32, {2}, float_bytes({1, 2})),
                       make_tensor("b", DType::F32, {1}, float_bytes({3}))});
    write_safetensors((folder / "model-00002-of-00002.safetensors").string(),
                      {make_tensor("c", DType::F32, {3}, float_bytes({4, 5, 6}))});
    write_bytes(folder / "model.safetensors.index.json",
                R"({"metadata": {"total_size": 24}, "weight_map": )" + weight_map + "}");
    return folder;
}

const std::string kShardOne = "\"model-00001-of-00002.safetensors\"";
const std::string kShardTwo = "\"model-00002-of-00002.safetensors\"";

TEST(SafetensorsFolder, ShardedIndex) {
    const fs::path folder = sharded_folder(
        "sharded", "{\"a\":" + kShardOne + ",\"b\":" + kShardOne + ",\"c\":" + kShardTwo + "}");
    SafetensorsCheckpoint checkpoint(folder.string() + "/");
    EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(checkpoint.files().size(), 2u);
    const HostTensor c = checkpoint.get("c");
    EXPECT_EQ(c.file, (folder / "model-00002-of-00002.safetensors").string());
    float values[3];
    std::memcpy(values, c.data, sizeof values);
    EXPECT_EQ(values[2], 6.0f);
    EXPECT_NE(checkpoint.describe().find("model.safetensors.index.json"), std::string::npos);
    expect_input_error([&] { checkpoint.get("d"); },
                       {"model.safetensors.index.json': no tensor 'd'"});
    EXPECT_TRUE(is_safetensors_folder(folder.string()));
}

TEST(SafetensorsFolder, SingleFilePreferredOverIndex) {
    const fs::path folder = sharded_folder("both", "{\"a\":\"missing.safetensors\"}");
    write_safetensors((folder / "model.safetensors").string(),
                      {make_tensor("z", DType::F32, {1}, float_bytes({7}))});
    SafetensorsCheckpoint checkpoint(folder.string());
    EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"z"}));
    EXPECT_EQ(checkpoint.describe(), (folder / "model.safetensors").string());
}

TEST(SafetensorsFolder, MissingShard) {
    const fs::path folder = sharded_folder(
        "missing_shard", "{\"a\":" + kShardOne + ",\"c\":\"model-00003-of-00003.safetensors\"}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {"model.safetensors.index.json'", "shard 'model-00003-of-00003.safetensors'",
                        "e.g. 'c'", "not found"});
}

TEST(SafetensorsFolder, TensorMappedToWrongShard) {
    const fs::path folder = sharded_folder(
        "wrong_shard", "{\"a\":" + kShardOne + ",\"b\":" + kShardTwo + ",\"c\":" + kShardTwo + "}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {"model.safetensors.index.json'",
                        "tensor 'b' is mapped to shard "
                        "'model-00002-of-00002.safetensors' but that file has no such tensor",
                        "it is in 'model-00001-of-00002.safetensors'"});
    const fs::path nowhere = sharded_folder("nowhere", "{\"q\":" + kShardOne + "}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(nowhere.string()); },
                       {"tensor 'q'", "nor does any other shard the index names"});
}

TEST(SafetensorsFolder, TensorInTwoShards) {
    const fs::path folder =
        sharded_folder("two_shards", "{\"a\":" + kShardOne + ",\"c\":" + kShardTwo + "}");
    write_safetensors((folder / "model-00002-of-00002.safetensors").string(),
                      {make_tensor("c", DType::F32, {1}, float_bytes({4})),
                       make_tensor("a", DType::F32, {2}, float_bytes({1, 2}))});
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {"model.safetensors.index.json'", "tensor 'a' is present in two shards"});
}

TEST(SafetensorsFolder, BadIndex) {
    const fs::path folder = sharded_folder("bad_index", "{}");
    const std::string index = (folder / "model.safetensors.index.json").string();
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {index, "\"weight_map\" is empty"});
    write_bytes(index, "{\"weight_map\": ");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {index, "not valid JSON"});
    write_bytes(index, "{\"metadata\": {}}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {index, "\"weight_map\" object"});
    write_bytes(index, "{\"weight_map\": {\"a\": 1}}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {index, "tensor 'a'", "expected a shard file name"});
    write_bytes(index,
                "{\"weight_map\": {\"a\": \"../sharded/model-00001-of-00002.safetensors\"}}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {index, "expected a file name in the same folder"});
    // A corrupt shard is reported with the shard's own name.
    write_bytes(index, "{\"weight_map\": {\"a\": " + kShardOne + "}}");
    write_bytes(folder / "model-00001-of-00002.safetensors", "\x01\x02");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                       {"model-00001-of-00002.safetensors'", "shorter than 8 bytes"});
}

TEST(SafetensorsFolder, PickleRefused) {
    const fs::path folder = scratch() / "pickle";
    write_bytes(folder / "config.json", "{}");
    write_bytes(folder / "pytorch_model.bin", "");
    const std::vector<std::string> phrases = {
        "'" + folder.string() + "'", "pytorch_model.bin", "refused",
        "unpickling executes arbitrary code",
        "from transformers import AutoModelForCausalLM as M; M.from_pretrained('" +
            folder.string() + "').save_pretrained('OUT', safe_serialization=True)"};
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); }, phrases);
    EXPECT_FALSE(is_safetensors_folder(folder.string()));
    // Passing the pickle file itself is refused the same way.
    expect_input_error(
        [&] { SafetensorsCheckpoint checkpoint((folder / "pytorch_model.bin").string()); },
        {"pytorch_model.bin", "unpickling executes arbitrary code", "safe_serialization=True"});
    // A sharded pickle (index only) as well.
    const fs::path sharded = scratch() / "pickle_sharded";
    write_bytes(sharded / "pytorch_model.bin.index.json", "{}");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(sharded.string()); },
                       {"pytorch_model.bin.index.json", "unpickling executes arbitrary code"});
    // Some other .bin: could be a pickle or a llama2.c file; say both.
    const fs::path other = scratch() / "other_bin";
    write_bytes(other / "weights.bin", "");
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(other.string()); },
                       {"weights.bin", "unpickling executes arbitrary code", "llama2.c"});
}

// The map-backed store the llama2.c and GGUF readers share: names sorted, tensors returned as
// added (same bytes, shared owner), an absent name an InputError naming the source and kind.
TEST(MapTensorStore, HoldsTensorsByNameAndNamesItsSource) {
    MapTensorStore store("model.bin", "test checkpoint");
    EXPECT_TRUE(store.names().empty());
    store.add(owned_float_tensor("b", "model.bin", {2}, {1.5f, -2.0f}));
    store.add(owned_float_tensor("a", "model.bin", {1, 3}, {0.0f, 1.0f, 2.0f}));
    EXPECT_EQ(store.names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(store.contains("a"));
    EXPECT_FALSE(store.contains("c"));
    EXPECT_EQ(store.describe(), "model.bin");
    const HostTensor b = store.get("b");
    EXPECT_EQ(b.dtype, DType::F32);
    EXPECT_EQ(b.shape, (std::vector<std::int64_t>{2}));
    ASSERT_EQ(b.bytes, 2 * sizeof(float));
    const float expected[] = {1.5f, -2.0f};
    EXPECT_EQ(std::memcmp(b.data, expected, sizeof(expected)), 0);
    EXPECT_EQ(store.get("b").data, b.data);  // shared, not copied
    EXPECT_THROW(store.add(owned_float_tensor("a", "model.bin", {1}, {9.0f})), std::logic_error);
    EXPECT_EQ(store.get("a").numel(), 3);  // the first one stays
    expect_input_error([&] { store.get("c"); }, {"model.bin", "test checkpoint", "no tensor 'c'"});
    // An empty tensor is a tensor.
    store.add(owned_float_tensor("empty", "model.bin", {0}, {}));
    EXPECT_EQ(store.get("empty").bytes, 0u);
}

TEST(SafetensorsFolder, EmptyOrMissingFolder) {
    const fs::path empty = scratch() / "empty_folder";
    fs::create_directories(empty);
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(empty.string()); },
                       {"'" + empty.string() + "'", "no model.safetensors"});
    write_safetensors((empty / "other.safetensors").string(), {});
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(empty.string()); },
                       {"other.safetensors", "pass that file itself"});
    // ...which works.
    EXPECT_TRUE(SafetensorsCheckpoint((empty / "other.safetensors").string()).names().empty());
    const std::string missing = (scratch() / "no_such_model").string();
    expect_input_error([&] { SafetensorsCheckpoint checkpoint(missing); },
                       {"'" + missing + "'", "no such file or folder"});
}

}  // namespace

// Fuzz finding (fuzz_safetensors_index): a number beyond double in model.safetensors.index.json
// ("99999E9992") escaped as nlohmann's out_of_range instead of an InputError naming the file.
// Every JSON reader goes through parse_json_text, so the same text in any of them is checked.
TEST(SafetensorsFolder, IndexWithANumberBeyondDouble) {
    for (const std::string number : {"99999E9992", "-1e400", "1E+309"}) {
        const fs::path folder = sharded_folder("huge_number", "{\"a\":" + number + "}");
        expect_input_error([&] { SafetensorsCheckpoint checkpoint(folder.string()); },
                           {"model.safetensors.index.json'", "not valid JSON"});
        expect_input_error([&] { parse_json_text(number, "x.json", "a number"); },
                           {"'x.json'", "not valid JSON", "expected a number"});
    }
    // A finite extreme still parses: the check is about overflow, not size.
    EXPECT_EQ(parse_json_text("1.7976931348623157e308", "x.json", "a number").get<double>(),
              1.7976931348623157e308);
}

// Found while fixing the above: the header of a .safetensors file had no depth limit, unlike
// parse_json_text; a header nested 10⁵ deep would overflow the stack of any message that
// dumps it. A value at depth kMaxJsonDepth (the header object is depth 0) still parses.
TEST(SafetensorsMalformed, HeaderNestedTooDeep) {
    const auto nested = [](int arrays) {  // the deepest array at depth `arrays`
        return "{\"__metadata__\": " + std::string(arrays, '[') + std::string(arrays, ']') + "}";
    };
    expect_file_error(hand_file("deep.safetensors", nested(100000)), {"nests deeper than"});
    expect_file_error(hand_file("just_too_deep.safetensors", nested(kMaxJsonDepth + 1)),
                      {"nests deeper than"});
    // At the limit the depth passes and the next check (metadata of strings) decides.
    expect_file_error(hand_file("deep_ok.safetensors", nested(kMaxJsonDepth)), {"__metadata__"});
    // The same limit in parse_json_text: the outermost array is at depth 0.
    const auto arrays = [](int count) { return std::string(count, '[') + std::string(count, ']'); };
    EXPECT_NO_THROW(parse_json_text(arrays(kMaxJsonDepth + 1), "x.json", "arrays"));
    EXPECT_THROW(parse_json_text(arrays(kMaxJsonDepth + 2), "x.json", "arrays"), InputError);
}

// The sharded writer against a plain model of the hub's layout: shards cut greedily at the byte
// limit (a tensor beyond it alone), consecutive names "model-0000i-of-0000k", an index whose
// total_size and weight_map say where each tensor is, bytes read back equal to those written.
TEST(SafetensorsSharded, WriterCutsAtTheLimitAndIndexesEveryTensor) {
    const fs::path folder = scratch() / "written_shards";
    fs::create_directories(folder);
    // 16, 16, 40 (over the limit of 32: alone), 8, 8, 8 bytes → {a, b}, {c}, {d, e, f}.
    const std::vector<TensorSpec> specs = {{"a", DType::F32, {4}},    {"b", DType::F32, {2, 2}},
                                           {"c", DType::F64, {5}},    {"d", DType::BF16, {4}},
                                           {"e", DType::I32, {1, 2}}, {"f", DType::U8, {8}}};
    std::vector<std::size_t> order;
    const auto pattern = [](std::size_t tensor, std::size_t k) {
        return static_cast<char>(17 * tensor + k);
    };
    std::vector<std::uint64_t> sizes;
    const auto names = write_safetensors_sharded(folder.string(), specs, 32,
                                                 [&](std::size_t i, std::ostream& out) {
                                                     order.push_back(i);
                                                     std::uint64_t bytes =
                                                         dtype_size(specs[i].dtype);
                                                     for (auto e : specs[i].shape)
                                                         bytes *= static_cast<std::uint64_t>(e);
                                                     sizes.push_back(bytes);
                                                     for (std::uint64_t k = 0; k < bytes; ++k)
                                                         out.put(pattern(i, k));
                                                 },
                                                 {{"format", "pt"}});
    EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));  // global order, once each
    EXPECT_EQ(names, (std::vector<std::string>{"model-00001-of-00003.safetensors",
                                               "model-00002-of-00003.safetensors",
                                               "model-00003-of-00003.safetensors"}));
    const nlohmann::json index =
        nlohmann::json::parse(std::ifstream(folder / "model.safetensors.index.json"));
    std::uint64_t total = 0;
    for (auto s : sizes)
        total += s;
    EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), total);
    const std::vector<std::string> expected_shard = {names[0], names[0], names[1],
                                                     names[2], names[2], names[2]};
    const SafetensorsCheckpoint checkpoint(folder.string());
    EXPECT_EQ(checkpoint.files().size(), 3u);
    for (std::size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(index["weight_map"][specs[i].name].get<std::string>(), expected_shard[i]);
        const HostTensor h = checkpoint.get(specs[i].name);
        EXPECT_EQ(h.file, (folder / expected_shard[i]).string());
        EXPECT_EQ(h.shape, specs[i].shape);
        ASSERT_EQ(h.bytes, sizes[i]);
        for (std::size_t k = 0; k < h.bytes; ++k)
            ASSERT_EQ(static_cast<const char*>(h.data)[k], pattern(i, k)) << specs[i].name;
    }
    const SafetensorsFile first((folder / names[0]).string());
    EXPECT_EQ(first.metadata().at("format"), "pt");
}

TEST(SafetensorsSharded, DegenerateLimitsAndBadCallbacks) {
    const fs::path folder = scratch() / "one_shard";
    fs::create_directories(folder);
    const std::vector<TensorSpec> specs = {{"a", DType::F32, {3}}, {"b", DType::F32, {0}}};
    auto zeros = [&](std::size_t i, std::ostream& out) {
        out << std::string(i == 0 ? 12 : 0, '\0');
    };
    // A limit no tensor reaches: one shard, "of-00001"; an empty tensor costs nothing.
    EXPECT_EQ(write_safetensors_sharded(folder.string(), specs, 1u << 30, zeros),
              (std::vector<std::string>{"model-00001-of-00001.safetensors"}));
    EXPECT_EQ(SafetensorsCheckpoint(folder.string()).names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_THROW(write_safetensors_sharded(folder.string(), specs, 0, zeros),
                 std::invalid_argument);
    // A callback writing the wrong byte count is a programming error, and no index appears.
    const fs::path bad = scratch() / "bad_callback";
    fs::create_directories(bad);
    EXPECT_THROW(write_safetensors_sharded(bad.string(), specs, 4,
                                           [](std::size_t, std::ostream& out) { out << "x"; }),
                 std::logic_error);
    EXPECT_FALSE(fs::exists(bad / "model.safetensors.index.json"));
}
