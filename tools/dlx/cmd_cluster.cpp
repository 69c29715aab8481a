// dlx cluster: hands over to the dlx-cluster script (installed in libexec/dlx, mirrored in the
// build tree), telling it where this dlx's plugin and programs are.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"

namespace dlx::cli {

namespace fs = std::filesystem;

int run_cluster(const Arguments& arguments, const std::string& /*program_path*/) {
  const fs::path bin_dir = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path prefix = bin_dir.parent_path();
  const fs::path script = prefix / "libexec/dlx/dlx-cluster";
  if (!fs::exists(script)) throw Error(fmt::format("the cluster tooling is missing: {}", script.string()));

  if (!std::getenv("DLX_PLUGIN")) {
    for (const auto& candidate : {prefix / "lib/dlx_spank.so", prefix / "lib/dlx/dlx_spank.so"}) {
      if (fs::exists(candidate)) {
        ::setenv("DLX_PLUGIN", candidate.c_str(), 1);
        break;
      }
    }
  }
  if (!std::getenv("DLX_BIN_DIR")) ::setenv("DLX_BIN_DIR", bin_dir.c_str(), 1);

  std::vector<std::string> words{"/bin/bash", script.string()};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  throw Error(fmt::format("cannot run {}: {}", script.string(), std::strerror(errno)));
}

}  // namespace dlx::cli
