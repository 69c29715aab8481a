// SPDX-License-Identifier: Apache-2.0
// manifest_key: the SHA-256 of a manifest's canonical text (manifest.hpp), apart from the walk so
// that what links only the walk (the plugin's size check at sbatch) does not need libcrypto.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/unique_fd.hpp"
#include "manifest.hpp"
#include "sha256.hpp"

namespace dlx::data {

namespace fs = std::filesystem;

namespace {

std::string content_sha256(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) throw_unreadable(path, errno);
  Sha256 hash;
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_unreadable(path, errno);
    if (got == 0) break;
    hash.update(buffer.data(), static_cast<std::size_t>(got));
  }
  return hash.hex_digest();
}

}  // namespace

std::string manifest_key(const Manifest& manifest, bool checksum) {
  Sha256 hash;
  hash.update(fmt::format("dlx-data-manifest 1\nsource {}:{}\nkind {}\nchecksum {}\n", manifest.source.string().size(),
                          manifest.source.string(), kind_name(manifest.kind), checksum ? 1 : 0));
  for (const auto& entry : manifest.entries) {
    // The source directory's own mtime changes whenever an entry is added or removed, which the
    // entries already show; with checksum, nothing time-based may count.
    // (Initialized in one expression: assigning "-" afterwards trips GCC 12's -Wrestrict false
    // positive, bug 105329, in some unity batches.)
    const bool top_directory = entry.relative.empty() && entry.type == 'd';
    const std::string stamp =
        !checksum ? std::to_string(top_directory ? 0 : entry.mtime_ns)
        : entry.type == 'f' ? content_sha256(entry.relative.empty() ? manifest.source : manifest.source / entry.relative)
                            : std::string(1, '-');
    hash.update(fmt::format("{} {} {} {:o} {}:{} {}:{}\n", entry.type, entry.size, stamp, entry.mode,
                            entry.relative.size(), entry.relative, entry.link_target.size(), entry.link_target));
  }
  return hash.hex_digest();
}

}  // namespace dlx::data
