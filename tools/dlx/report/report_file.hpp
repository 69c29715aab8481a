// SPDX-License-Identifier: Apache-2.0
#pragma once
// Writing the report: the whole page to a temporary name beside it (same directory, so the
// rename is atomic), fsynced, renamed over the final name, the directory fsynced. A browser or a
// web server reading the file (--watch rewrites it every few seconds) sees the old page or the
// new one, never half of one; on any error the temporary file is removed and the old page stays.
#include <filesystem>
#include <string>

namespace dlx::cli::report {

// Refuses, before any work, an output the report could not be written to: a parent directory
// that does not exist or that the caller may not write, or a directory at `output` itself.
// Throws Error saying what, where and how to fix it.
void check_output_path(const std::filesystem::path& output);

// Writes `page` to `output` as above, with mode 0666 less the umask (as any file the user
// creates). Throws Error naming the path on failure, leaving nothing behind.
void write_report_file(const std::filesystem::path& output, const std::string& page);

}  // namespace dlx::cli::report
