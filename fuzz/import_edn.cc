// Jepsen's EDN op format (checkers/import.h import_edn): a history or HistoryError, nothing else. What it returns
// must obey the op rules (validate_history) and survive the checkers' own pairing of invokes and completions.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkers/import.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lockcheck::fuzz::check_import<lockcheck::HistoryError>(
      "import_edn", [&] { return lockcheck::import_edn(text, "fuzz"); },
      [](const lockcheck::History& h) { lockcheck::validate_history(h, "fuzz"); });
  return 0;
}
