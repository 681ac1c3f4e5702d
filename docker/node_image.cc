#include "docker/node_image.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>
#include <boost/uuid/detail/sha1.hpp>

#include "core/cluster.h"
#include "sys/process.h"

namespace lockcheck {
namespace docker {

namespace fs = boost::filesystem;

namespace {

constexpr const char* kFormatVersion = "lockcheck node image v4";  // v4: files hashed by sha1sum
constexpr auto kLddTimeout = std::chrono::seconds(60);

// A program name (looked up on PATH) or a path, resolved to its real file. Throws ClusterError.
fs::path resolve_program(const std::string& what, const std::string& name_or_path) {
  fs::path p;
  if (name_or_path.find('/') != std::string::npos) {
    p = name_or_path;
  } else {
    p = boost::process::search_path(name_or_path);
    if (p.empty()) {
      // sbin is often missing from a user's PATH; iptables lives there.
      for (const char* dir : {"/usr/sbin", "/sbin"}) {
        if (fs::exists(fs::path(dir) / name_or_path)) {
          p = fs::path(dir) / name_or_path;
          break;
        }
      }
    }
  }
  boost::system::error_code ec;
  if (p.empty() || !fs::exists(p, ec)) {
    throw ClusterError("cannot build the node image: " + what + " `" + name_or_path + "` not found");
  }
  return fs::canonical(p);
}

// ldd over files: every library path it names (the "=> path" column and the loader line), in order.
// library_path: LD_LIBRARY_PATH for ldd ("" none): the JRE's libraries name libjvm.so, which the launcher
// loads from its own folder (no RUNPATH says so).
std::vector<std::string> shared_libraries(const std::vector<fs::path>& files, const std::string& library_path = "") {
  fs::path ldd = boost::process::search_path("ldd");
  if (ldd.empty()) throw ClusterError("cannot build the node image: `ldd` not found on PATH");
  std::vector<std::string> argv = {ldd.string()};
  if (!library_path.empty()) argv = {"env", "LD_LIBRARY_PATH=" + library_path, ldd.string()};
  for (const auto& f : files) argv.push_back(f.string());
  CommandResult r = run_command(argv, kLddTimeout);
  if (r.timed_out) throw ClusterError("cannot build the node image: `ldd` did not finish");
  std::vector<std::string> libs;
  std::istringstream lines(r.out);
  std::string line;
  std::string current = files.size() == 1 ? files[0].string() : "";
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] != '\t') {  // "file:" header when ldd is given several files
      current = line.substr(0, line.size() - (line.back() == ':' ? 1 : 0));
      continue;
    }
    std::string body = line.substr(1);
    auto arrow = body.find(" => ");
    std::string path;
    if (arrow != std::string::npos) {
      std::string rest = body.substr(arrow + 4);
      if (rest.rfind("not found", 0) == 0) {
        throw ClusterError("cannot build the node image: " + current + " needs " + body.substr(0, arrow) +
                           ", which ldd does not find");
      }
      path = rest.substr(0, rest.find(' '));
    } else if (!body.empty() && body[0] == '/') {
      path = body.substr(0, body.find(' '));  // the dynamic loader
    }
    if (!path.empty() && path[0] == '/') libs.push_back(path);
  }
  if (r.exit_code != 0 && libs.empty()) {
    throw ClusterError("cannot build the node image: `ldd` failed: " + r.err);
  }
  return libs;
}

// The JRE's libraries a ZooKeeper member's JVM maps (measured: /proc/PID/maps of a local member, OpenJDK 17):
// ldd runs over these (and bin/java); the rest of lib/ is copied but not resolved (AWT, sound: never loaded).
inline constexpr const char* kJreLoadedLibraries[] = {
    "lib/libjli.so",     "lib/server/libjvm.so", "lib/libjava.so",       "lib/libjimage.so",
    "lib/libzip.so",     "lib/libnet.so",        "lib/libnio.so",        "lib/libextnet.so",
    "lib/libjsvml.so",   "lib/libverify.so",     "lib/libmanagement.so", "lib/libmanagement_ext.so"};
// What a JRE does not need of a JDK's lib/ (sources, javac's symbols, the CDS archive for heaps over 32 GB).
inline constexpr const char* kJreSkipped[] = {"src.zip", "ct.sym", "classes_nocoops.jsa"};

// Every regular file under dir (following symlinks, skipping dangling ones) as (its path under dir as named,
// the file it resolves to). Bounded depth.
void jre_files(const fs::path& dir, int depth, std::vector<std::pair<fs::path, fs::path>>* out) {
  if (depth > 16) return;
  boost::system::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (std::find(std::begin(kJreSkipped), std::end(kJreSkipped), p.filename().string()) != std::end(kJreSkipped)) {
      continue;
    }
    const fs::file_status st = fs::status(p, ec);  // follows a symlink
    if (ec) {
      ec.clear();  // dangling
      continue;
    }
    if (fs::is_directory(st)) jre_files(p, depth + 1, out);
    else if (fs::is_regular_file(st)) out->push_back({p, fs::canonical(p)});
  }
}

// The hex SHA-1 of each file, in order: sha1sum over batches of them. Throws ClusterError when one cannot be read.
std::vector<std::string> file_digests(const std::vector<std::string>& files) {
  const fs::path sha1sum = boost::process::search_path("sha1sum");
  if (sha1sum.empty()) throw ClusterError("cannot build the node image: `sha1sum` (coreutils) not found on PATH");
  std::vector<std::string> out;
  constexpr size_t kBatch = 256;
  for (size_t start = 0; start < files.size(); start += kBatch) {
    std::vector<std::string> argv = {sha1sum.string(), "--"};
    const size_t end = std::min(files.size(), start + kBatch);
    argv.insert(argv.end(), files.begin() + static_cast<std::ptrdiff_t>(start),
                files.begin() + static_cast<std::ptrdiff_t>(end));
    const CommandResult r = run_command(argv, kLddTimeout);
    if (!r.ok()) throw ClusterError("cannot build the node image: `sha1sum` failed: " + r.err);
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.size() >= 40) out.push_back(line.substr(line[0] == '\\' ? 1 : 0, 40));
    }
    if (out.size() != end) {
      throw ClusterError("cannot build the node image: `sha1sum` answered " + std::to_string(out.size()) +
                         " digests for " + std::to_string(end) + " files");
    }
  }
  return out;
}

std::string repository_of(const NodeImageInputs& inputs) {
  return inputs.server.repository.empty() ? "lockcheck-node" : inputs.server.repository;
}

unsigned file_mode(const fs::path& p) { return static_cast<unsigned>(fs::status(p).permissions()) & 07777; }

std::string hex(const unsigned int (&digest)[5]) {
  char buf[41];
  for (int i = 0; i < 5; ++i) std::snprintf(buf + 8 * i, 9, "%08x", digest[i]);
  return std::string(buf, 40);
}

}  // namespace

ImagePlan plan_node_image(const NodeImageInputs& inputs) {
  if (inputs.clock_shim.empty()) throw ClusterError("cannot build the node image: no clock shim library given");
  const fs::path iptables = resolve_program("iptables", inputs.iptables);
  const fs::path shim = resolve_program("the clock shim", inputs.clock_shim);
  const ImageNeeds& server = inputs.server;
  // A Java runtime: the JRE (JAVA_HOME: the folder above the real bin/java).
  fs::path java_home;
  if (!server.java.empty()) {
    if (!find_program(server.java)) {
      throw ClusterError("cannot build the node image: the server needs `" + server.java +
                         "` on this host, to copy its JRE into the image (apt-get install default-jdk-headless)");
    }
    java_home = resolve_program("java", server.java).parent_path().parent_path();
  }
  const std::string multi = iptables.filename().string();
  if (multi.rfind("xtables-", 0) != 0) {
    throw ClusterError("cannot build the node image: iptables resolves to " + iptables.string() +
                       ", not an xtables multi-binary (xtables-nft-multi or xtables-legacy-multi)");
  }

  // iptables loads its extensions (the DROP target's parser, matches) from libxtables' directory.
  fs::path xtables_dir;
  for (const auto& lib : shared_libraries({iptables})) {
    fs::path real = fs::canonical(lib);
    if (real.filename().string().rfind("libxtables.so", 0) == 0) xtables_dir = real.parent_path() / "xtables";
  }
  if (xtables_dir.empty() || !fs::is_directory(xtables_dir)) {
    throw ClusterError("cannot build the node image: the xtables module directory of " + iptables.string() +
                       " was not found");
  }
  // Only the extensions the backend's rules use (`-s/-d ADDR -j DROP` needs libxt_standard) plus a few for
  // hand-written rules in a post-mortem (-p tcp/udp --dport, -j REJECT). Taking all ~120 would make every
  // start pay for ldd over each of them (about 2 s here).
  std::vector<fs::path> modules;
  for (const char* name : {"libxt_standard.so", "libxt_tcp.so", "libxt_udp.so", "libipt_REJECT.so"}) {
    if (fs::exists(xtables_dir / name)) modules.push_back(xtables_dir / name);
  }
  if (modules.empty() || modules[0].filename() != "libxt_standard.so") {
    throw ClusterError("cannot build the node image: " + (xtables_dir / "libxt_standard.so").string() +
                       " not found (iptables needs it for -j DROP)");
  }

  std::map<std::string, ImageEntry> entries;  // by dest: sorted and without duplicates
  auto add_file = [&](const std::string& dest, const fs::path& source) {
    fs::path real = fs::canonical(source);
    entries[dest] = ImageEntry{ImageEntry::Kind::kFile, dest, real.string(), file_mode(real)};
  };
  auto add_symlink = [&](const std::string& dest, const std::string& target) {
    entries[dest] = ImageEntry{ImageEntry::Kind::kSymlink, dest, target, 0777};
  };
  auto add_dir = [&](const std::string& dest, unsigned mode) {
    entries[dest] = ImageEntry{ImageEntry::Kind::kDir, dest, "", mode};
  };

  std::vector<fs::path> elf = {iptables, shim};
  // The server kind's programs (a program it names twice, e.g. under a second name, is a symlink).
  for (const auto& p : server.programs) {
    if (!p.link_to.empty()) {
      add_symlink(p.image_path, p.link_to);
      continue;
    }
    const fs::path real = resolve_program(p.name, p.host_program.empty() ? p.name : p.host_program);
    add_file(p.image_path, real);
    elf.push_back(real);
  }
  add_file("/usr/sbin/" + multi, iptables);
  add_symlink(kImageIptables, multi);  // the multi-binary dispatches on argv[0]
  add_symlink(kImageIptablesRestore, multi);
  add_file(kImageClockShim, shim);
  if (!inputs.power_shim.empty()) {
    const fs::path power = resolve_program("the power shim", inputs.power_shim);
    add_file(kImagePowerShim, power);
    elf.push_back(power);
  }
  for (const auto& m : modules) add_file((xtables_dir / m.filename()).string(), m);
  std::vector<fs::path> jre_elf;
  if (!java_home.empty()) {
    std::vector<std::pair<fs::path, fs::path>> files;
    for (const char* sub : {"lib", "conf"}) jre_files(java_home / sub, 0, &files);
    for (const auto& [named, real] : files) add_file(named.string(), real);
    add_file((java_home / "bin/java").string(), java_home / "bin/java");
    if (fs::exists(java_home / "release")) add_file((java_home / "release").string(), java_home / "release");
    add_symlink(kImageJava, (java_home / "bin/java").string());
    jre_elf.push_back(java_home / "bin/java");
    for (const char* lib : kJreLoadedLibraries) {
      if (fs::exists(java_home / lib)) jre_elf.push_back(java_home / lib);
    }
  }
  for (const auto& f : server.files) add_file(f, f);  // at the path the server names it (ZooKeeper's jars)

  // The shell and tools of the remote scripts, in /usr/bin (on PATH in every container), dash also as /bin/sh.
  std::vector<fs::path> tools;
  const fs::path dash = resolve_program("a POSIX shell", "dash");
  add_file("/usr/bin/dash", dash);
  add_symlink("/usr/bin/sh", "dash");
  add_symlink("/bin/sh", "/usr/bin/dash");
  tools.push_back(dash);
  for (const char* tool : kImageTools) {
    const fs::path t = resolve_program(tool, tool);
    add_file(std::string("/usr/bin/") + tool, t);
    tools.push_back(t);
  }
  elf.insert(elf.end(), tools.begin(), tools.end());
  elf.insert(elf.end(), modules.begin(), modules.end());
  // A library goes where ldd found it: with no ld.so.cache in the image, the loader searches its trusted
  // directories (/lib/<triplet>, /usr/lib/<triplet>, ...), which include every place ldd names here.
  for (const auto& lib : shared_libraries(elf)) add_file(lib, lib);
  if (!jre_elf.empty()) {
    const std::string lib_path = (java_home / "lib/server").string() + ":" + (java_home / "lib").string();
    for (const auto& lib : shared_libraries(jre_elf, lib_path)) {
      add_file(fs::path(lib).lexically_normal().string(), lib);  // java names ".../bin/../lib/libjli.so"
    }
  }

  add_dir("/data", 01777);  // redis' working dir (a tmpfs or a bind mount over it at run time)
  add_dir("/tmp", 01777);
  add_dir("/run", 0755);            // iptables' lock file
  add_dir("/var/log", 0755);        // the node's log file is bind-mounted here
  add_dir("/lockcheck", 0755);      // the runs' folders in a container (docker/docker_cluster.cc)
  // Configs the server kind ships (for the compose files in docker/), in a folder a server may rewrite them in
  // (Sentinel rewrites its config by rename: the folder must be writable).
  add_dir("/etc/lockcheck", 0777);
  for (const auto& [dest, text] : server.texts) entries[dest] = ImageEntry{ImageEntry::Kind::kText, dest, text, 0666};

  ImagePlan plan;
  plan.dockerfile =
      "# Generated by lockcheck (docker/node_image.cc): every file comes from the build host.\n"
      "FROM scratch\n"
      "COPY rootfs/ /\n"
      "LABEL " +
      std::string(kImageLabel) + "=node\n";

  boost::uuids::detail::sha1 sha;
  auto feed = [&sha](const std::string& s) {
    sha.process_bytes(s.data(), s.size());
    sha.process_bytes("\0", 1);
  };
  feed(kFormatVersion);
  feed(plan.dockerfile);
  // Each file's bytes enter the hash as their SHA-1, computed by coreutils' sha1sum (a JRE is 180 MB: Boost's
  // SHA-1 took 8.6 s over a ZooKeeper image's files here, sha1sum 0.4 s).
  std::vector<std::string> sources;
  for (const auto& kv : entries) {
    if (kv.second.kind == ImageEntry::Kind::kFile) sources.push_back(kv.second.source);
  }
  const std::vector<std::string> digests = file_digests(sources);
  size_t next = 0;
  for (auto& kv : entries) {
    const ImageEntry& e = kv.second;
    feed(std::to_string(static_cast<int>(e.kind)) + " " + e.dest + " " + std::to_string(e.mode));
    if (e.kind == ImageEntry::Kind::kSymlink || e.kind == ImageEntry::Kind::kText) feed(e.source);
    if (e.kind != ImageEntry::Kind::kFile) continue;
    boost::system::error_code ec;
    const uint64_t size = fs::file_size(e.source, ec);
    if (ec) throw ClusterError("cannot build the node image: cannot read " + e.source + ": " + ec.message());
    feed(digests[next++]);
    feed(std::to_string(size));
    plan.total_bytes += size;
    plan.entries.push_back(e);
  }
  for (auto& kv : entries) {
    if (kv.second.kind != ImageEntry::Kind::kFile) plan.entries.push_back(kv.second);
  }
  std::sort(plan.entries.begin(), plan.entries.end(),
            [](const ImageEntry& a, const ImageEntry& b) { return a.dest < b.dest; });
  unsigned int digest[5];
  sha.get_digest(digest);
  plan.hash = hex(digest);
  plan.tag = repository_of(inputs) + ":" + plan.hash.substr(0, 12);
  return plan;
}

void write_build_context(const ImagePlan& plan, const std::string& dir) {
  const fs::path root = fs::path(dir) / "rootfs";
  try {
    fs::create_directories(root);
    for (const auto& e : plan.entries) {
      fs::path dest = root / e.dest.substr(1);  // e.dest is absolute; drop its leading /
      fs::create_directories(dest.parent_path());
      switch (e.kind) {
        case ImageEntry::Kind::kFile:
          fs::copy_file(e.source, dest, fs::copy_option::overwrite_if_exists);
          fs::permissions(dest, static_cast<fs::perms>(e.mode));
          break;
        case ImageEntry::Kind::kSymlink: fs::create_symlink(e.source, dest); break;
        case ImageEntry::Kind::kDir:
          fs::create_directories(dest);
          fs::permissions(dest, static_cast<fs::perms>(e.mode));
          break;
        case ImageEntry::Kind::kText: {
          std::ofstream out(dest.string(), std::ios::binary | std::ios::trunc);
          out << e.source;
          if (!out) throw ClusterError("cannot write " + dest.string());
          out.close();
          fs::permissions(dest, static_cast<fs::perms>(e.mode));
          break;
        }
      }
    }
    std::ofstream(fs::path(dir) / "Dockerfile") << plan.dockerfile;
  } catch (const fs::filesystem_error& e) {
    throw ClusterError(std::string("cannot write the node image's build context: ") + e.what());
  }
}

NodeImage ensure_node_image(const DockerCli& cli, const NodeImageInputs& inputs, std::chrono::seconds build_timeout) {
  const auto t0 = std::chrono::steady_clock::now();
  ImagePlan plan = plan_node_image(inputs);
  NodeImage image;
  image.tag = plan.tag;
  CommandResult have = cli.run({"image", "inspect", "--format", "{{.Id}}", plan.tag}, std::chrono::seconds(30));
  if (!have.ok()) {
    boost::system::error_code ec;
    fs::path dir = fs::temp_directory_path() / fs::unique_path("lockcheck-image-%%%%-%%%%-%%%%");
    struct RemoveDir {
      fs::path p;
      ~RemoveDir() {
        boost::system::error_code ignored;
        fs::remove_all(p, ignored);
      }
    } guard{dir};
    fs::create_directories(dir, ec);
    if (ec) throw ClusterError("cannot create " + dir.string() + ": " + ec.message());
    write_build_context(plan, dir.string());
    cli.check({"build", "--quiet", "--tag", plan.tag, dir.string()}, build_timeout);
    image.built = true;
  }
  cli.check({"tag", plan.tag, repository_of(inputs) + ":latest"}, std::chrono::seconds(30));
  if (image.built) {
    // Inputs changed (a Redis upgrade, a rebuilt shim): drop the images of older inputs so that they do not
    // pile up. Without --force, an image that a container (another live run) still uses stays.
    CommandResult ls = cli.run({"image", "ls", "--filter", std::string("label=") + kImageLabel + "=node", "--format",
                                "{{.Repository}}:{{.Tag}}"},
                               std::chrono::seconds(30));
    std::istringstream lines(ls.out);
    std::string ref;
    while (std::getline(lines, ref)) {
      if (ref.rfind(repository_of(inputs) + ":", 0) != 0) continue;
      if (ref == plan.tag || ref == repository_of(inputs) + ":latest") continue;
      cli.run({"rmi", ref}, std::chrono::seconds(60));
    }
  }
  image.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  return image;
}

}  // namespace docker
}  // namespace lockcheck
