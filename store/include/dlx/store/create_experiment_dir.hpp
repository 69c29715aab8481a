#pragma once
#include <filesystem>
#include <string>

namespace dlx::store {

// Creates <user_root>/<name> (0750), or <name>.2, <name>.3, ... when taken, atomically with
// mkdir so that two submissions of the same experiment never share a directory; creates
// <user_root> (0750) first if needed, and trials/ inside. Returns the directory created.
// Throws SystemError naming the path.
std::filesystem::path create_experiment_dir(const std::filesystem::path& user_root,
                                            const std::string& name);

// Makes <job link> -> experiment_dir (idempotent; an existing link is left alone).
void link_job(const std::filesystem::path& user_root, const std::string& job_id,
              const std::filesystem::path& experiment_dir);

}  // namespace dlx::store
