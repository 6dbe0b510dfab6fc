// The main of every doctest executable: doctest's own, plus one rule. A run whose filters select
// no test case fails. ctest runs each case as `--test-case=<name>`; a name that ctest's list
// syntax splits (a ';' in it) or that doctest reads as a pattern would otherwise run nothing and
// pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

namespace {

struct RunSummary {
  bool ended = false;
  unsigned selected = 0;
};

RunSummary g_summary;

// Records how many test cases passed the filters; reports nothing itself.
class SelectionListener : public doctest::IReporter {
 public:
  explicit SelectionListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_summary.ended = true;
    g_summary.selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("factum_selection", 1, SelectionListener);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  if (g_summary.ended && g_summary.selected == 0) {
    std::cerr << "factum tests: no test case matches the filters given; nothing was run\n";
    return 1;
  }
  return result;
}
