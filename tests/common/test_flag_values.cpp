// The shared flag-value parsers of common/: lists and grids of positive numbers
// (common/number_list), named choices (common/flag_choice) and shape_text — each against plain
// expectations written out, and the one-line messages naming the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/flag_choice.hpp"
#include "common/number_list.hpp"
#include "common/safetensors.hpp"

using namespace attngeo;

namespace {

std::string message_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

enum class Colour { red, green, blue };
const FlagChoice<Colour> kColours[] = {
    {"red", Colour::red}, {"green", Colour::green}, {"blue", Colour::blue}};

}  // namespace

TEST(FlagValues, PositiveListKeepsTheOrderGiven) {
    EXPECT_EQ(parse_positive_list("0.1,0.01,2", "--tau"), (std::vector<double>{0.1, 0.01, 2}));
    EXPECT_EQ(message_of([] { parse_positive_list("0.1,x", "--tau"); }),
              "--tau '0.1,x': 'x', expected a positive number");
    EXPECT_EQ(message_of([] { parse_positive_list("0.1,-1", "--tau"); }),
              "--tau '0.1,-1': '-1', expected a positive number");
    EXPECT_EQ(message_of([] { parse_positive_list("", "--tau"); }),
              "--tau: expected at least one positive number");
    EXPECT_NE(message_of([] { parse_positive_list("inf", "--tau"); }), "(no error)");
    EXPECT_NE(message_of([] { parse_positive_list("1,,2", "--tau"); }), "(no error)");
}

TEST(FlagValues, PositiveGridIsALogGridOrASortedList) {
    const std::vector<double> grid = parse_positive_grid("0.01:100:5", "--temperatures");
    ASSERT_EQ(grid.size(), 5u);
    const double expected[] = {0.01, 0.1, 1, 10, 100};
    double largest = 0;
    for (int i = 0; i < 5; ++i)
        largest = std::max(largest, std::fabs(grid[i] - expected[i]) / expected[i]);
    std::printf("largest relative difference from the decades: %.3g\n", largest);
    EXPECT_LT(largest, 1e-15);
    EXPECT_EQ(parse_positive_grid("2,0.5,2", "--epsilons"), (std::vector<double>{0.5, 2}));
    EXPECT_EQ(message_of([] { parse_positive_grid("1:10:1", "--temperatures"); }),
              "--temperatures '1:10:1': expected lo:hi:count (a log grid, count >= 2) or a comma "
              "list");
    EXPECT_EQ(message_of([] { parse_positive_grid("10:1:3", "--temperatures"); }),
              "--temperatures '10:1:3': expected lo < hi");
    EXPECT_EQ(message_of([] { parse_positive_grid("0:1:3", "--temperatures"); }),
              "--temperatures '0:1:3': '0', expected a positive number");
}

TEST(FlagValues, WholeNumbers) {
    EXPECT_EQ(whole_number_or_minus_one("0"), 0);
    EXPECT_EQ(whole_number_or_minus_one("123456789"), 123456789);
    EXPECT_EQ(whole_number_or_minus_one("1234567890"), -1);
    EXPECT_EQ(whole_number_or_minus_one("-1"), -1);
    EXPECT_EQ(whole_number_or_minus_one("1e3"), -1);
    EXPECT_EQ(whole_number_or_minus_one(""), -1);
}

TEST(FlagValues, NamedChoices) {
    EXPECT_EQ(parse_choice("green", "--colour", kColours), Colour::green);
    EXPECT_STREQ(choice_name(Colour::blue, kColours), "blue");
    EXPECT_EQ(choice_names(kColours), "red, green or blue");
    EXPECT_EQ(message_of([] { parse_choice("Red", "--colour", kColours); }),
              "--colour: 'Red', expected red, green or blue");
}

TEST(FlagValues, ShapeText) {
    EXPECT_EQ(shape_text({}), "[]");
    EXPECT_EQ(shape_text({32, 31}), "[32, 31]");
    EXPECT_EQ(shape_text({-1, 4}), "[T, 4]");
}
