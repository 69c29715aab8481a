// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/oci_spec.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace dlx::container {

namespace {

nlohmann::json bind_mount(const std::filesystem::path& source, const std::filesystem::path& destination, bool read_only) {
  nlohmann::json options = nlohmann::json::array({"rbind", "nosuid", "nodev"});
  if (read_only) options.push_back("ro");
  return {{"destination", destination.string()}, {"type", "bind"}, {"source", source.string()}, {"options", options}};
}

}  // namespace

nlohmann::json oci_spec(const ContainerRun& run, const std::filesystem::path& skeleton,
                        const std::vector<Mount>& image_binds, OciIdentity who,
                        const std::vector<std::string>& gpu_devices) {
  const bool rootless = who.uid != 0;
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] : run.env) env.push_back(name + "=" + value);
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& image : image_binds) mounts.push_back(bind_mount(image.host, image.container, true));
  // The kernel's file systems: the host's /proc and /sys (no PID or network namespace of our own
  // to mount fresh ones for), a /dev of the runtime's default devices, the host's /dev/shm (NCCL's
  // shared memory between the ranks of a node), /tmp, and the host's name resolution.
  mounts.push_back(bind_mount("/proc", "/proc", false));
  mounts.push_back(bind_mount("/sys", "/sys", true));
  mounts.push_back({{"destination", "/dev"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                    {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}});
  mounts.push_back({{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"},
                    {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}});
  mounts.push_back(bind_mount("/dev/shm", "/dev/shm", false));
  for (const auto& device : gpu_devices) mounts.push_back(bind_mount(device, device, false));
  mounts.push_back(bind_mount("/tmp", "/tmp", false));
  for (const char* file : {"/etc/hosts", "/etc/resolv.conf"}) {
    if (::access(file, R_OK) == 0) mounts.push_back(bind_mount(file, file, true));
  }
  for (const auto& mount : run.mounts) mounts.push_back(bind_mount(mount.host, mount.container, mount.read_only));

  nlohmann::json namespaces = nlohmann::json::array({{{"type", "mount"}}});
  nlohmann::json linux_section = {{"namespaces", namespaces}};
  if (rootless) {
    linux_section["namespaces"].push_back({{"type", "user"}});
    linux_section["uidMappings"] = {{{"containerID", 0}, {"hostID", who.uid}, {"size", 1}}};
    linux_section["gidMappings"] = {{{"containerID", 0}, {"hostID", who.gid}, {"size", 1}}};
  }
  const auto empty = nlohmann::json::array();
  return {
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", rootless ? 0 : who.uid}, {"gid", rootless ? 0 : who.gid}}},
        {"args", run.command},
        {"env", env},
        {"cwd", run.workdir.string()},
        {"capabilities", {{"bounding", empty}, {"effective", empty}, {"permitted", empty}, {"ambient", empty}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", skeleton.string()}, {"readonly", true}}},
      {"mounts", mounts},
      {"linux", linux_section},
  };
}

}  // namespace dlx::container
