// A fresh temporary folder for one test, removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

namespace lockcheck {

class TempDir {
 public:
  // prefix: the folder's name before a random suffix, under gtest's temporary folder.
  explicit TempDir(const std::string& prefix = "lockcheck-test") {
    std::string tmpl = ::testing::TempDir() + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(&tmpl[0]) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    boost::system::error_code ignored;
    boost::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  const std::string& str() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace lockcheck
