// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "backends.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/unique_fd.hpp"

namespace dlx::container::detail {

std::optional<std::string> version_problem(const std::vector<std::string>& version_command) {
  try {
    const auto result = run_bounded(version_command, CommandLimits{.timeout = std::chrono::seconds(10)});
    if (result.exit_code == 0) return std::nullopt;
    return fmt::format("{} exited {}: {}", fmt::join(version_command, " "), result.exit_code, result.err.substr(0, 200));
  } catch (const std::exception& e) {
    return e.what();
  }
}

void check_mount_path(const std::filesystem::path& path, std::string_view runtime) {
  if (path.string().find_first_of(":,") != std::string::npos) {
    throw ContainerError(fmt::format("{} cannot mount {}: its mount option splits paths at ':' and ','  (rename the "
                                     "directory, or use the crun runtime, which takes any path)", runtime, path.string()));
  }
}

void add_mount_options(std::vector<std::string>& argv, const std::vector<Mount>& mounts, std::string_view option,
                       std::string_view runtime) {
  for (const auto& mount : mounts) {
    check_mount_path(mount.host, runtime);
    check_mount_path(mount.container, runtime);
    argv.emplace_back(option);
    argv.push_back(fmt::format("{}:{}{}", mount.host.string(), mount.container.string(), mount.read_only ? ":ro" : ""));
  }
}

std::string oci_transport(const ImageRef& image) {
  return (image.kind == ImageRef::Kind::oci_archive ? "oci-archive:" : "oci:") + image.path.string();
}

std::vector<std::string> gpu_device_files(const std::vector<int>& gpus) {
  std::vector<std::string> files;
  if (gpus.empty()) return files;
  for (const int gpu : gpus) files.push_back(fmt::format("/dev/nvidia{}", gpu));
  for (const char* control : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    if (::access(control, F_OK) == 0) files.emplace_back(control);
  }
  return files;
}

FileLock open_lock(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) throw ContainerError(fmt::format("cannot open the lock {}: {}", path.string(), std::strerror(errno)));
  return FileLock(std::move(fd), path, LockOwner::description);
}

FileLock lock_exclusively(const std::filesystem::path& path) {
  auto lock = open_lock(path);
  lock.lock(LockMode::exclusive);
  return lock;
}

void mirror_host_tops(const std::filesystem::path& root, std::vector<Mount>& mounts, bool make_mount_points) {
  for (const char* top : {"bin", "lib", "lib64", "sbin"}) {
    const auto host = std::filesystem::path("/") / top;
    std::error_code error;
    const auto status = std::filesystem::symlink_status(host, error);
    if (std::filesystem::is_symlink(status)) {
      std::filesystem::create_symlink(std::filesystem::read_symlink(host), root / top, error);
    } else if (std::filesystem::is_directory(status)) {
      if (make_mount_points) create_directories_with_mode(root / top, 0700);
      mounts.push_back({host, host, true});
    }
  }
}

std::string short_sha256(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw ContainerError("sha256 failed (OpenSSL)");
  }
  std::string hex;
  for (unsigned int i = 0; i < 8; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::filesystem::path write_env_file(const std::filesystem::path& state_dir,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  std::string text;
  for (const auto& [name, value] : env) {
    if (value.find('\n') != std::string::npos) {
      throw ContainerError(fmt::format("the variable {} holds a line break, which an environment file cannot carry", name));
    }
    text += fmt::format("{}={}\n", name, value);
  }
  const auto path = state_dir / "container.env";
  write_file_durably(path, text, 0600);
  return path;
}

}  // namespace dlx::container::detail
