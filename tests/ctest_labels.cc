// ctest_labels TEST_BINARY OUT_FILE: the ctest properties of the server and lock contracts' tests, from the server
// kinds' specs (tests/support/contract_params.h): runs TEST_BINARY --gtest_list_tests, and for each test whose
// parameter is KIND_BACKEND (or KIND_LOCK: the local backend) writes a set_tests_properties line with its labels and resource locks into OUT_FILE,
// which ctest includes after the discovered tests (tests/CMakeLists.txt). So a new server kind's tests carry its
// label without a CMake edit.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sys/process.h"
#include "tests/support/contract_params.h"

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ";") + x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: ctest_labels TEST_BINARY OUT_FILE\n";
    return 2;
  }
  const auto r = lockcheck::run_command({argv[1], "--gtest_list_tests"}, std::chrono::seconds(60));
  if (!r.ok()) {
    std::cerr << "ctest_labels: " << argv[1] << " --gtest_list_tests failed: " << r.err << "\n";
    return 3;
  }
  // gtest lists "Suite/Fixture." then indented "Test/param  # GetParam() = ..." lines.
  std::ostringstream out;
  std::string suite, line;
  std::istringstream in(r.out);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.find(' '));
      continue;
    }
    std::string test = line.substr(line.find_first_not_of(' '));
    test = test.substr(0, test.find(' '));
    // The parameter names of both contracts, each with the kind and backend whose properties it carries.
    std::vector<std::pair<std::string, lockcheck::testing_util::ContractParam>> names;
    for (const auto& p : lockcheck::testing_util::contract_params()) {
      names.push_back({lockcheck::testing_util::contract_param_name(p), p});
    }
    for (const auto& p : lockcheck::testing_util::lock_contract_params()) {
      names.push_back({lockcheck::testing_util::lock_contract_param_name(p), {p.kind, "local"}});
    }
    for (const auto& [name, p] : names) {
      if (test.size() <= name.size() || test.compare(test.size() - name.size() - 1, std::string::npos, "/" + name) != 0) {
        continue;
      }
      const auto props = lockcheck::testing_util::contract_properties(p.kind, p.backend);
      out << "set_tests_properties(\"" << suite << test << "\" PROPERTIES LABELS \"" << joined(props.labels) << "\"";
      if (!props.locks.empty()) out << " RESOURCE_LOCK \"" << joined(props.locks) << "\"";
      out << ")\n";
      break;
    }
  }
  std::ofstream f(argv[2], std::ios::trunc);
  f << out.str();
  return f ? 0 : 3;
}
