// Text of layouts and the print_layout table.
#include <gtest/gtest.h>

#include <sstream>

#include <tessel/core/print.hpp>

namespace {

using namespace tessel;

TEST(Print, LayoutTextMarksStaticIntegers) {
  EXPECT_EQ(to_string(make_layout(make_shape(Int<2>{}, 4), make_stride(4, Int<1>{}))),
            "(_2,4):(4,_1)");
  std::ostringstream os;
  os << make_layout(make_shape(Int<2>{}, Int<3>{})) << " " << Int<5>{} << " " << make_shape(1, 2);
  EXPECT_EQ(os.str(), "(_2,_3):(_3,_1) _5 (1,2)");
}

TEST(Print, PrintLayoutShowsEveryOffset) {
  std::ostringstream os;
  print_layout(os, make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{})));
  EXPECT_EQ(os.str(),
            "(_2,_3):(_1,_2)\n"
            "     0   1   2  \n"
            "   +---+---+---+\n"
            " 0 | 0 | 2 | 4 |\n"
            "   +---+---+---+\n"
            " 1 | 1 | 3 | 5 |\n"
            "   +---+---+---+\n");
}

TEST(Print, PrintLayoutOfARank1Layout) {
  std::ostringstream os;
  print_layout(os, make_layout(make_shape(3), make_stride(10)));
  EXPECT_EQ(os.str(),
            "(3):(10)\n"
            "      0    1    2  \n"
            "   +----+----+----+\n"
            "   |  0 | 10 | 20 |\n"
            "   +----+----+----+\n");
}


TEST(Print, PrintLayoutOfRank3IsAListOfSlices) {
  std::ostringstream os;
  print_layout(os, make_layout(make_shape(2, Int<2>{}, 3), make_stride(1, Int<6>{}, 2)));
  EXPECT_EQ(os.str(),
            "(2,_2,3):(1,_6,2)\n"
            "(0,_,_):\n"
            "      0    1    2  \n"
            "   +----+----+----+\n"
            " 0 |  0 |  2 |  4 |\n"
            "   +----+----+----+\n"
            " 1 |  6 |  8 | 10 |\n"
            "   +----+----+----+\n"
            "\n"
            "(1,_,_):\n"
            "      0    1    2  \n"
            "   +----+----+----+\n"
            " 0 |  1 |  3 |  5 |\n"
            "   +----+----+----+\n"
            " 1 |  7 |  9 | 11 |\n"
            "   +----+----+----+\n");
}

}  // namespace
