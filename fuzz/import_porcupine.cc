// Porcupine's operation format (checkers/import.h import_porcupine): a history or HistoryError, nothing else; what
// it returns obeys the op rules.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkers/import.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lockcheck::fuzz::check_import<lockcheck::HistoryError>(
      "import_porcupine", [&] { return lockcheck::import_porcupine(text, "fuzz"); },
      [](const lockcheck::History& h) { lockcheck::validate_history(h, "fuzz"); });
  return 0;
}
