// Tests for common/: strict CSV reading (headerless numeric tables and header CSVs), run
// manifests, selection-size lists, number formatting, atomic writes. Each bad-input class must
// raise InputError naming the file or flag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "common/run_schema.hpp"

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

// Header CSVs: values read back through CsvReader and CsvTable equal the numbers written
// (format_double round-trips), addressed by name whatever the column order, with blank lines,
// CRLF line ends and an extra column ignored.
TEST(HeaderCsv, ReadsBackWhatWasWrittenInAnyColumnOrder) {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal(0, 1e3);
    const int rows = 50;
    std::vector<double> x(rows), y(rows);
    std::vector<std::int64_t> k(rows);
    for (int r = 0; r < rows; ++r) {
        x[r] = normal(rng);
        y[r] = std::ldexp(normal(rng), -60);
        k[r] = static_cast<std::int64_t>(rng() >> 2) - (std::int64_t{1} << 60);
    }
    for (const bool swapped : {false, true}) {
        std::ostringstream text;
        text << (swapped ? "y,extra,k,x\r\n" : "x,k,extra,y\n");
        for (int r = 0; r < rows; ++r) {
            if (r == 10) text << "\n";  // a blank line: skipped, but counted in line numbers
            if (swapped)
                text << format_double(y[r]) << ",e," << k[r] << ',' << format_double(x[r])
                     << "\r\n";
            else
                text << format_double(x[r]) << ',' << k[r] << ",e," << format_double(y[r]) << '\n';
        }
        const auto path = write_temp(swapped ? "swapped.csv" : "plain.csv", text.str());
        CsvReader reader(path, "a test table");
        const std::size_t cx = reader.column("x"), cy = reader.column("y"), ck = reader.column("k");
        EXPECT_FALSE(reader.find_column("absent").has_value());
        double largest = 0;
        int r = 0;
        while (reader.next()) {
            ASSERT_LT(r, rows);
            EXPECT_EQ(reader.row().line(), r + 2 + (r >= 10)) << r;
            largest = std::max({largest, std::abs(reader.row().finite_number(cx) - x[r]),
                                std::abs(reader.row().number(cy) - y[r])});
            EXPECT_EQ(reader.row().integer(ck), k[r]) << r;
            ++r;
        }
        EXPECT_EQ(r, rows);
        EXPECT_EQ(reader.rows_read(), rows);
        const CsvTable table = read_csv_table(path);
        ASSERT_EQ(table.rows.size(), static_cast<std::size_t>(rows));
        for (int t = 0; t < rows; ++t)
            largest = std::max({largest, std::abs(table.finite_number(t, "x") - x[t]),
                                std::abs(table.number(t, "y") - y[t])});
        EXPECT_EQ(table.line_numbers[10], 13);
        std::cout << (swapped ? "swapped" : "plain") << ": largest difference " << largest << "\n";
        EXPECT_EQ(largest, 0.0);
    }
}

TEST(HeaderCsv, NonFiniteOnlyWhereAllowedAndEmptyFieldsOptional) {
    const auto path = write_temp("special.csv", "a,b\ninf,\n-inf,2.5\nnan,x\n");
    const CsvTable table = read_csv_table(path);
    EXPECT_TRUE(std::isinf(table.number(0, "a")) && table.number(0, "a") > 0);
    EXPECT_TRUE(std::isinf(table.number(1, "a")) && table.number(1, "a") < 0);
    EXPECT_TRUE(std::isnan(table.number(2, "a")));
    EXPECT_EQ(error_of([&] { table.finite_number(0, "a"); }),
              "'" + path + "' line 2 column 'a': 'inf' is not finite, expected a finite number");
    EXPECT_EQ(error_of([&] { table.number(0, "b"); }),
              "'" + path + "' line 2 column 'b': empty field, expected a number");
    EXPECT_EQ(error_of([&] { table.number(2, "b"); }),
              "'" + path + "' line 4 column 'b': 'x' is not a number");
    CsvReader reader(path, "a test table");
    ASSERT_TRUE(reader.next());
    EXPECT_FALSE(reader.row().optional_finite_number(1).has_value());
    ASSERT_TRUE(reader.next());
    EXPECT_EQ(reader.row().optional_finite_number(1), 2.5);
    EXPECT_EQ(error_of([&] { reader.row().integer(1); }),
              "'" + path + "' line 3 column 'b': '2.5' is not an integer");
    ASSERT_TRUE(reader.next());
    EXPECT_NE(error_of([&] { reader.row().optional_finite_number(0); }).find("'nan' is not finite"),
              std::string::npos);
    EXPECT_FALSE(reader.next());
    EXPECT_TRUE(read_csv_table(write_temp("header_only.csv", "a,b\n")).rows.empty());
}

// One dialect for every defect: the path quoted, then line and column where there is one.
TEST(HeaderCsv, EachDefectIsOneLineNamingFileLineAndColumn) {
    const auto ragged = write_temp("ragged_header.csv", "a,b\n1,2\n\n3\n");
    EXPECT_EQ(error_of([&] {
                  CsvReader reader(ragged, "a test table");
                  while (reader.next()) {
                  }
              }),
              "'" + ragged + "' line 4: 1 fields, expected 2 like the header (ragged row)");
    const auto two = write_temp("two_columns.csv", "a,b\n1,2\n");
    EXPECT_EQ(error_of([&] { CsvReader(two, "a test table").column("c"); }),
              "'" + two + "': missing column 'c' in the header");
    EXPECT_EQ(error_of([&] { read_csv_table(two).column("c"); }),
              "'" + two + "': missing column 'c' in the header");
    const auto empty = write_temp("empty_header.csv", "");
    EXPECT_EQ(error_of([&] { CsvReader(empty, "a test table"); }),
              "'" + empty + "': empty file, expected a test table with a header line");
    EXPECT_EQ(error_of([&] { CsvReader("/nonexistent/t.csv", "a test table"); }),
              "'/nonexistent/t.csv': cannot open file, expected a test table");
    const auto huge = write_temp("huge_integer.csv", "n\n99999999999999999999\n");
    CsvReader reader(huge, "a test table");
    ASSERT_TRUE(reader.next());
    EXPECT_THROW(reader.row().integer(0), InputError);
    // A quoted field with a control byte stays one line.
    const auto control = write_temp("control_header.csv", "a\n1\x1b[2J\n");
    EXPECT_EQ(error_of([&] { read_csv_table(control).finite_number(0, "a"); }),
              "'" + control + "' line 2 column 'a': '1\\x1b[2J' is not a number");
}

// A folder's format is its manifest's format_version: one without it, or with another number,
// is refused in one line naming the manifest, whatever its columns look like.
TEST(RunManifest, FormatVersionIsRequiredAndMustBeThisOne) {
    const fs::path dir = fs::path(write_temp("marker_version", "")).parent_path() / "versioned";
    fs::create_directories(dir);
    const std::string path = schema::manifest_path(dir.string());
    EXPECT_EQ(path, (dir / "manifest.json").string());
    nlohmann::json manifest = manifest_header(schema::kind::extract);
    EXPECT_EQ(manifest.at("format_version"), schema::kFormatVersion);
    std::ofstream(path) << manifest.dump();
    EXPECT_EQ(read_run_manifest(dir.string(), {"extract"}).at("kind"), "extract");
    manifest.erase("format_version");
    std::ofstream(path) << manifest.dump();
    EXPECT_EQ(error_of([&] { read_run_manifest(dir.string(), {"extract"}); }),
              "'" + path +
                  "': no format_version, expected format_version 4 (written before run folders "
                  "were versioned: rerun the command that made it)");
    for (const char* other : {"1", "2", "0", "\"3\"", "2.5"}) {
        manifest["format_version"] = nlohmann::json::parse(other);
        std::ofstream(path) << manifest.dump();
        const std::string message = error_of([&] { read_run_manifest(dir.string(), {"extract"}); });
        EXPECT_EQ(message, "'" + path + "': format_version " + manifest["format_version"].dump() +
                               ", expected format_version 4 (written by another attngeo "
                               "release: read it with that release or rerun the command that "
                               "made it)")
            << other;
    }
    EXPECT_EQ(schema::bound_value_columns().size(), 11u);
    EXPECT_EQ(schema::bound_flag_columns().front(), "delta_le0");
}

TEST(RunManifest, KindAndIntegersAreCheckedNamingTheFile) {
    const fs::path dir = fs::path(write_temp("marker", "")).parent_path() / "run";
    fs::create_directories(dir);
    const std::string path = (dir / "manifest.json").string();
    EXPECT_EQ(run_manifest_path(dir.string()), path);
    std::ofstream(path)
        << R"({"format_version": 4, "kind": "sweep", "model": {"layers": 12, "heads": 2.0,
                              "head_dim": 2.5, "big": 1e30, "name": "x"}})";
    const auto manifest = read_run_manifest(dir.string(), {"simulate", "sweep"});
    EXPECT_EQ(manifest.at("kind"), "sweep");
    EXPECT_EQ(error_of([&] { read_run_manifest(dir.string(), {"extract"}); }),
              "'" + path +
                  "': kind is \"sweep\", expected \"extract\" (a folder written by attngeo "
                  "extract)");
    EXPECT_EQ(json_integer_at(manifest, "/model/layers", 1, 100, path), 12);
    EXPECT_EQ(json_integer_at(manifest, "/model/heads", 1, 100, path), 2);  // a whole float
    EXPECT_EQ(error_of([&] { json_integer_at(manifest, "/model/layers", 13, 100, path); }),
              "'" + path + "': /model/layers = 12, expected 13..100");
    EXPECT_EQ(error_of([&] { json_integer_at(manifest, "/model/width", 1, 100, path); }),
              "'" + path + "': /model/width is missing, expected an integer");
    for (const char* pointer : {"/model/head_dim", "/model/big", "/model/name"}) {
        const std::string message =
            error_of([&] { json_integer_at(manifest, pointer, 1, 100, path); });
        EXPECT_EQ(message.rfind("'" + path + "': ", 0), 0u) << message;
        EXPECT_NE(message.find(pointer), std::string::npos) << message;
    }
    std::ofstream(path) << R"([1, 2])";
    EXPECT_NE(error_of([&] {
                  read_run_manifest(dir.string(), {"simulate", "sweep"});
              }).find("kind is missing, expected \"simulate\" or \"sweep\""),
              std::string::npos);
    fs::remove(path);
    EXPECT_NE(error_of([&] { read_run_manifest(dir.string(), {"extract"}); }).find(path),
              std::string::npos);
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

// A file that cannot be created is named as the caller gave it, never by its temporary name.
TEST(AtomicFile, AnUncreatableFileIsNamedNotItsTemporary) {
    const std::string path = "/nonexistent-attngeo-folder/out.csv";
    try {
        write_file_atomic(path, "x\n");
        ADD_FAILURE() << "wrote " << path;
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what, "cannot write '" + path +
                            "': No such file or directory (does its folder exist and is it "
                            "writable?)");
        EXPECT_EQ(what.find(".tmp."), std::string::npos) << what;
    }
}
