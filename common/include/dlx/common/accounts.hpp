// SPDX-License-Identifier: Apache-2.0
#pragma once
// Who a uid is, from the passwd database (getpwuid_r: files, LDAP, SSSD alike), in the forms dlx
// needs. A uid may have no entry (a container, a site whose directory service is down, a test):
// each form says what it gives then.
#include <sys/types.h>

#include <optional>
#include <string>

namespace dlx {

struct PasswdEntry {
  std::string name;
  gid_t gid = 0;
};

// The uid's passwd entry, or nothing when it has none.
std::optional<PasswdEntry> passwd_entry(uid_t uid);

// The name dlx puts in paths: "alice", else the uid in digits ("1234"). It names the storage root's
// <user> directory and replaces %u in local_dir=, Slurm's TmpFS and data.to: the plugin,
// dlx-launch and `dlx` all ask here, so that they find the same directories.
std::string account_name(uid_t uid);

// The name for messages: "alice", else "uid 1234".
std::string user_name_of(uid_t uid);

}  // namespace dlx
