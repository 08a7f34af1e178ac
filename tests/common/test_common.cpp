// Tests for common/: strict CSV reading, selection-size lists, number formatting, atomic
// writes. Each bad-input class must raise InputError naming the file or flag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>

#include "common/atomic_file.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/number_list.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

std::string write_temp(const std::string& name, const std::string& content) {
    const fs::path dir =
        fs::temp_directory_path() / ("attngeo_test_common_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path path = dir / name;
    std::ofstream(path) << content;
    return path.string();
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Csv, ReadsCommasWhitespaceCommentsAndBlankLines) {
    const auto path = write_temp("ok.csv", "# header comment\n0.5, 1, 2\n\n0.5,3,4 # trailing\n");
    const NumericTable t = read_numeric_table(path, "points");
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(t.columns(), 3u);
    EXPECT_EQ(t.rows[1][2], 4.0);
    EXPECT_EQ(t.line_numbers[1], 4);
    const auto ws = write_temp("ws.txt", "1 2\n3\t4\n");
    EXPECT_EQ(read_numeric_table(ws, "m").rows[1][1], 4.0);
}

TEST(Csv, RejectsEachDefectWithFileAndLine) {
    const auto ragged = write_temp("ragged.csv", "1,2,3\n1,2\n");
    EXPECT_NE(error_of([&] { read_numeric_table(ragged, "points"); }).find("line 2"),
              std::string::npos);
    const auto nan = write_temp("nan.csv", "1,nan\n");
    EXPECT_NE(error_of([&] { read_numeric_table(nan, "points"); }).find("not finite"),
              std::string::npos);
    const auto inf = write_temp("inf.csv", "1,-inf\n");
    EXPECT_NE(error_of([&] { read_numeric_table(inf, "points"); }).find("not finite"),
              std::string::npos);
    const auto word = write_temp("word.csv", "1,abc\n");
    EXPECT_NE(error_of([&] { read_numeric_table(word, "points"); }).find("'abc'"),
              std::string::npos);
    const auto empty_field = write_temp("emptyfield.csv", "1,,2\n");
    EXPECT_NE(error_of([&] { read_numeric_table(empty_field, "points"); }).find("empty field"),
              std::string::npos);
    const auto trailing = write_temp("trailing.csv", "1,2,\n");
    EXPECT_NE(error_of([&] { read_numeric_table(trailing, "points"); }).find("empty field"),
              std::string::npos);
    const auto empty = write_temp("empty.csv", "# nothing\n\n");
    EXPECT_NE(error_of([&] { read_numeric_table(empty, "points"); }).find("no data"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  read_numeric_table("/nonexistent/x.csv", "points");
              }).find("/nonexistent/x.csv"),
              std::string::npos);
    const auto two = write_temp("two.csv", "1,2\n");
    EXPECT_NE(
        error_of([&] { read_numeric_column(two, "--norms file"); }).find("one number per line"),
        std::string::npos);
}

// Fuzz finding (fuzz_numeric_csv): a flag value or field holding a line break was quoted
// verbatim, so the error printed as several lines. InputError now escapes line breaks and
// control bytes itself; the reference below is written out by hand, byte by byte.
TEST(InputErrors, StayOneLineWhateverTheyQuote) {
    const std::string value = std::string("0.1\n2\r\x01") + '\0' + "\x7f\tz";
    const std::string message = error_of([&] { parse_finite_double(value, "--value"); });
    std::cout << "message: " << message << "\n";
    EXPECT_EQ(message, "--value: '0.1\\n2\\r\\x01\\x00\\x7f\tz' is not a number");
    // Every byte that is not a control character passes unchanged (UTF-8 included).
    std::string printable;
    for (int c = 0x20; c < 0x7f; ++c)
        printable += static_cast<char>(c);
    printable += "\xce\xb1\xff";
    EXPECT_EQ(std::string(InputError(printable).what()), printable);
    for (int c = 0; c < 0x20; ++c) {
        const std::string text = InputError(std::string(1, static_cast<char>(c))).what();
        EXPECT_EQ(text.find_first_of("\n\r"), std::string::npos) << c;
        EXPECT_EQ(text.size(), c == '\t' ? 1u : c == '\n' || c == '\r' ? 2u : 4u) << c;
    }
    const auto control = write_temp("control_byte.csv", "1,2\n3,4\x1b[2J\n");
    const std::string csv_message = error_of([&] { read_numeric_table(control, "points"); });
    EXPECT_NE(csv_message.find("line 2 column 2: '4\\x1b[2J' is not a number"), std::string::npos)
        << csv_message;
}

TEST(SelectionSizes, ExpandsAllPow2ListsAndRanges) {
    EXPECT_EQ(parse_selection_sizes("all", 4, "--N"), (std::vector<int>{1, 2, 3, 4}));
    EXPECT_EQ(parse_selection_sizes("pow2", 6, "--N"), (std::vector<int>{1, 2, 4, 6}));
    EXPECT_EQ(parse_selection_sizes("pow2", 8, "--N"), (std::vector<int>{1, 2, 4, 8}));
    EXPECT_EQ(parse_selection_sizes("4,1:3,4", 9, "--N"), (std::vector<int>{1, 2, 3, 4}));
}

TEST(SelectionSizes, RejectsOutOfRangeAndGarbageNamingTheFlag) {
    for (const char* bad : {"0", "10", "a", "1,,2", "3:1", "", "-1", "2.5"}) {
        const std::string message = error_of([&] { parse_selection_sizes(bad, 9, "--N"); });
        EXPECT_EQ(message.rfind("--N", 0), 0u) << "spec '" << bad << "' gave: " << message;
    }
}

TEST(Format, SeventeenDigitsRoundTripAndNonFinite) {
    const double x = 0.1 + 0.2;
    EXPECT_EQ(std::stod(format_double(x)), x);
    EXPECT_EQ(format_double(0.30000000000000004), "0.30000000000000004");
    EXPECT_EQ(format_double(std::numeric_limits<double>::infinity()), "inf");
    EXPECT_EQ(format_double(-std::numeric_limits<double>::infinity()), "-inf");
    EXPECT_EQ(format_double(std::nan("")), "nan");
    EXPECT_EQ(format_double(1.0), "1");
}

TEST(AtomicFile, WritesCompletelyAndLeavesNoTemporary) {
    const fs::path dir =
        fs::temp_directory_path() / ("attngeo_test_atomic_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string path = (dir / "out.csv").string();
    write_file_atomic(path, "a,b\n1,2\n");
    write_file_atomic(path, "replaced\n");
    std::ifstream in(path);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, "replaced\n");
    int files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir))
        ++files;
    EXPECT_EQ(files, 1);
    EXPECT_THROW(write_file_atomic((dir / "missing" / "x.csv").string(), "x"), InputError);
}
