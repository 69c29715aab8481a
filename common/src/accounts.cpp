// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/accounts.hpp"

#include <pwd.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

namespace dlx {

std::optional<PasswdEntry> passwd_entry(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(4096);
  // ERANGE: the entry (a long gecos or home) does not fit: grow the buffer, within reason.
  int result = 0;
  while ((result = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found)) == ERANGE &&
         buffer.size() < (std::size_t{1} << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (result != 0 || !found) return std::nullopt;
  return PasswdEntry{found->pw_name, found->pw_gid};
}

std::string account_name(uid_t uid) {
  if (auto entry = passwd_entry(uid)) return entry->name;
  return std::to_string(uid);
}

std::string user_name_of(uid_t uid) {
  if (auto entry = passwd_entry(uid)) return entry->name;
  return fmt::format("uid {}", uid);
}

}  // namespace dlx
