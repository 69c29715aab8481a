// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a file is, for messages that refuse it: "a FIFO", "a directory", ...
#include <sys/stat.h>

namespace dlx {

inline const char* describe_file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace dlx
