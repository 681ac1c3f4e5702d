#include "core/run_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace lockcheck {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RunFileError(tmp + ": cannot open for writing");
    out << content;
    out.flush();
    if (!out) throw RunFileError(tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw RunFileError(path + ": cannot write (" + why + ")");
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace lockcheck
