// The README's support matrix must be exactly what the capability table generates
// (regenerate with: build/flashband caps --markdown).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "flashband/capability.h"

TEST(ReadmeMatrix, MatchesCapabilityTable) {
  std::ifstream f(FLASHBAND_SOURCE_DIR "/README.md");
  ASSERT_TRUE(f) << "cannot open README.md";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string readme = ss.str();
  const std::string begin = "<!-- support-matrix:begin -->\n", end = "<!-- support-matrix:end -->";
  const auto b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks the support-matrix:begin marker";
  ASSERT_NE(e, std::string::npos) << "README.md lacks the support-matrix:end marker";
  const std::string in_readme = readme.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(in_readme, flashband::support_matrix_markdown())
      << "README.md support matrix is stale: run `build/flashband caps --markdown` and paste it between the markers";
}
