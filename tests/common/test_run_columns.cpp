// The run-folder column table (common/run_columns): the ```dtypes blocks of docs/commands/ are
// generated from it (regenerate with ATTNGEO_WRITE_DOCS=1), and its lookups refuse a file or
// column no writer writes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/run_columns.hpp"
#include "common/run_schema.hpp"

namespace schema = attngeo::schema;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

const char* const kFence = "```dtypes\n";

// The text between "```dtypes\n" and the closing "```" of a page; empty when it has none.
std::string dtypes_block_of(const std::string& page_text) {
    const auto open = page_text.find(kFence);
    if (open == std::string::npos) return "";
    const auto start = open + std::string(kFence).size();
    return page_text.substr(start, page_text.find("```", start) - start);
}

}  // namespace

TEST(RunColumns, DocsDtypesBlocksAreTheTable) {
    for (const std::string& page : schema::csv_pages()) {
        const std::string path = std::string(ATTNGEO_SOURCE_DIR) + "/docs/commands/" + page + ".md";
        std::string text = read_text(path);
        ASSERT_NE(text.find(kFence), std::string::npos) << path << " has no ```dtypes block";
        const std::string expected = schema::dtypes_block(page);
        if (std::getenv("ATTNGEO_WRITE_DOCS") != nullptr) {
            const auto start = text.find(kFence) + std::string(kFence).size();
            text.replace(start, text.find("```", start) - start, expected);
            std::ofstream(path) << text;
        }
        EXPECT_EQ(dtypes_block_of(read_text(path)), expected)
            << path << " differs from common/run_columns; regenerate it with "
            << "ATTNGEO_WRITE_DOCS=1 test_common --gtest_filter=RunColumns.*";
    }
}

// The prose tables of docs/commands/ quote a file's columns as `a,b,c` beside its meaning: a row
// "| `FILE` | `LIST` ..." whose list opens with the file's first column must be its header, so
// the meanings cannot drift from the columns the writers emit. Prints how many rows it checked.
TEST(RunColumns, DocsProseColumnListsAreTheTable) {
    const std::regex row(R"(^\| `([a-z_0-9]+\.csv)` \|[^\n]*?`([A-Za-z_0-9]+(,[A-Za-z_0-9]+)+)`)",
                         std::regex::multiline);
    int checked = 0;
    for (const std::string& page : schema::csv_pages()) {
        const std::string path = std::string(ATTNGEO_SOURCE_DIR) + "/docs/commands/" + page + ".md";
        const std::string text = read_text(path);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), row);
             it != std::sregex_iterator(); ++it) {
            const std::string file = (*it)[1], quoted = (*it)[2];
            bool documented = false;
            for (std::string line, block = schema::dtypes_block(page);
                 !block.empty() && !documented;) {
                line = block.substr(0, block.find('\n'));
                block.erase(0, line.size() + 1);
                documented = line.rfind(file + ":", 0) == 0;
            }
            if (!documented) continue;
            const std::string header = schema::csv_header(page, file);
            if (quoted.substr(0, quoted.find(',')) != header.substr(0, header.find(','))) continue;
            EXPECT_EQ(quoted, header) << path << ": the row of " << file;
            ++checked;
        }
    }
    std::cout << checked << " prose column lists checked against common/run_columns\n";
    EXPECT_GE(checked, 34);  // the rows quoting a full header today
}

TEST(RunColumns, HeaderJoinsTheNamesInOrder) {
    EXPECT_EQ(schema::csv_header(schema::page::extract, schema::file::cos_by_lag),
              "layer,head,lag,cos_mean,pairs");
    const auto& pr = schema::csv_columns(schema::page::extract, schema::file::precision_recall);
    ASSERT_GE(pr.size(), 6u);
    EXPECT_EQ(pr[5].name, "P_se");
    EXPECT_EQ(pr[5].type, "float");
    EXPECT_TRUE(pr[5].may_be_empty);
    EXPECT_FALSE(pr[4].may_be_empty);
}

// A slice of a file's columns, as `attngeo bounds`' value and flag columns are taken.
TEST(RunColumns, SliceRunsFromFirstToLastIncluded) {
    EXPECT_EQ(schema::csv_column_names(schema::page::extract, schema::file::cos_by_lag, "head",
                                       "cos_mean"),
              (std::vector<std::string>{"head", "lag", "cos_mean"}));
    EXPECT_EQ(schema::bound_flag_columns().front(), "delta_le0");
    EXPECT_EQ(schema::bound_value_columns().back(), "Fmin_upper");
    EXPECT_THROW(schema::csv_column_names(schema::page::extract, schema::file::cos_by_lag, "head",
                                          "no_such_column"),
                 std::logic_error);
}

TEST(RunColumns, UnknownFilesAndColumnsAreProgrammingErrors) {
    EXPECT_THROW(schema::csv_header(schema::page::extract, "nothing.csv"), std::logic_error);
    EXPECT_THROW(schema::csv_header(schema::page::truncate, schema::file::heads), std::logic_error);
    EXPECT_THROW(schema::csv_column_names(schema::page::extract, schema::file::heads,
                                          {"layer", "no_such_column"}),
                 std::logic_error);
    const auto names =
        schema::csv_column_names(schema::page::extract, schema::file::heads, {"head", "layer"});
    EXPECT_EQ(names, (std::vector<std::string>{"head", "layer"}));
}

TEST(RunColumns, EveryTypeIsOneTheDocsDefine) {
    for (const std::string& page : schema::csv_pages()) {
        std::istringstream lines(schema::dtypes_block(page));
        for (std::string line; std::getline(lines, line);) {
            const std::string file = line.substr(0, line.find(':'));
            for (const auto& column : schema::csv_columns(page, file))
                EXPECT_TRUE(column.type == "int" || column.type == "bigint" ||
                            column.type == "float" || column.type == "flag" ||
                            column.type == "bool" || column.type == "str")
                    << page << " " << file << " " << column.name << ": " << column.type;
        }
    }
}

// fits.csv and profile.csv end with the intervals of the fitted parameters, in
// fitted_parameters() order, then "unidentified": the order compare's interval fields follow.
TEST(RunColumns, IntervalColumnsFollowTheFittedParameters) {
    const auto& parameters = schema::fitted_parameters();
    ASSERT_EQ(parameters.size(), 12u);
    auto tail = [](const std::string& file, std::size_t count) {
        const auto names = schema::csv_column_names(schema::page::compare, file);
        return std::vector<std::string>(names.end() - static_cast<std::ptrdiff_t>(count),
                                        names.end());
    };
    auto expected = [&](std::size_t first, std::size_t last) {
        std::vector<std::string> names;
        for (std::size_t p = first; p <= last; ++p) {
            names.push_back(parameters[p] + "_lo");
            names.push_back(parameters[p] + "_hi");
        }
        names.push_back("unidentified");
        return names;
    };
    EXPECT_EQ(tail(schema::file::fits, 13), expected(0, 5));
    EXPECT_EQ(tail(schema::file::profile, 13), expected(6, 11));
    EXPECT_EQ(tail(schema::file::profile_global, 13), expected(6, 11));
}
