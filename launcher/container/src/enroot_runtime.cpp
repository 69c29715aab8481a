// SPDX-License-Identifier: Apache-2.0
// Enroot: `enroot start` runs the command in a container unpacked from a squashfs image, sharing
// the host's namespaces but the mount and user ones; the mounts in enroot's fstab form (SRC DST
// none x-create=auto,rbind[,ro], colon-separated on the command line), GPUs through NVIDIA's hook
// and NVIDIA_VISIBLE_DEVICES. enroot start has no working-directory option: /bin/sh in the image
// changes to it.
//
// Unpacked once per node, not per run: `enroot create` takes seconds to minutes per image (1.5 GB:
// 4-7 s here), which is what pyxis users pay at every job. dlx's containers live in the user's
// private node-local directory (<local>/dlx-<uid>/containers/enroot, as ENROOT_DATA_PATH of
// dlx's enroot commands), with their markers and locks: node-local even where the user's
// ENROOT_DATA_PATH is a shared home, and gone with that directory. The first run on a node
// unpacks the image into a container named by the image file's identity (dlx-<sha256 of its path,
// size and modification time>) under a lock, and writes a marker once `enroot create` succeeded;
// every later run starts that container again (Enroot serialises the starts' configuration
// itself, with its rootfs lock). A killed unpack leaves no marker and is redone; a new version of
// the image file is a new container. Starts are read-only (ENROOT_ROOTFS_WRITABLE=n): no run's
// writes reach the next. A docker:// reference is imported once per node into a .sqsh file beside
// them, the same way.
//
// Older versions' containers, removed by the runs of a newer one. Per container <name>, in the
// node-local directory:
//   <name>.unpacked  the marker: the image's identity (its path on the first line), written once
//                    `enroot create` succeeded.
//   <name>.lock      exclusive while a run unpacks <name> (others wait for it).
//   <name>.inuse     shared by every run of <name>, from before it looks for the marker until the
//                    run ends (dlx-launch keeps it: RuntimeCommand::held).
// A run, once it has its container, looks for markers of the same image path under other names:
// each one whose .lock and .inuse it gets exclusively at once (no unpack, no run holds it) is
// removed: `enroot remove --force`, then its marker and lock files, and said in the run's log.
// One still in use is kept and taken by a later run. Nobody waits on a removal but a run of that
// very container, which could only have read the image file's identity before it changed: it
// finds the marker gone and unpacks again. A failed `enroot remove` keeps the marker, so a later
// run tries again; the run itself goes on.
//
// The trainer's variables go through a configuration script (`enroot start --conf`), whose
// environ() prints the run's private environment file, the way Enroot documents for such a
// script. Not `--env NAME` with the values in enroot's own environment: enroot would then run
// with the image's PATH, and it finds its own helpers (enroot-nsenter, enroot-switchroot) on
// PATH. Not `--env NAME=VALUE`: other users read argv.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "backends.hpp"
#include "dlx/common/bounded_command.hpp"
#include "dlx/common/durable_file.hpp"

namespace dlx::container::detail {

namespace {

class Enroot final : public Runtime {
 public:
  std::string_view name() const override { return "enroot"; }

  std::optional<std::string> unavailable(bool) const override {
    const auto program = find_program("enroot");
    if (!program) return "enroot is not installed (not in PATH)";
    return version_problem({*program, "version"});  // enroot has no --version option
  }

  std::optional<std::string> refuses(const ImageRef& image) const override {
    switch (image.kind) {
      case ImageRef::Kind::squashfs:
      case ImageRef::Kind::registry:
        return std::nullopt;
      default:
        return fmt::format("enroot runs squashfs images and docker:// references, not {} (use the apptainer or "
                           "podman runtime, or `enroot import` it to a .sqsh file)", to_string(image.kind));
    }
  }

  RuntimeCommand command(const ContainerRun& run) const override {
    const auto program = find_program("enroot").value_or("enroot");
    const auto node_dir = run.state_dir.parent_path();  // the user's private node-local directory
    const auto data_path = node_dir / "enroot";
    RuntimeCommand command;
    auto image = run.image.path;
    if (run.image.kind == ImageRef::Kind::registry) image = imported(program, run, node_dir, command.notes);
    auto [container, in_use] = unpacked(program, image, node_dir, data_path, command.notes);
    command.held.push_back(std::move(in_use));
    remove_older_versions(program, image, container, node_dir, data_path, command.notes);
    auto env = run.env;
    if (!run.gpus.empty()) {
      std::string list;
      for (const int gpu : run.gpus) list += (list.empty() ? "" : ",") + std::to_string(gpu);
      env.emplace_back("NVIDIA_VISIBLE_DEVICES", list);  // NVIDIA's hook reads it from the environment file
    }
    write_env_file(run.state_dir, env);
    // BASH_SOURCE in a function names the file that defined it: no path to quote.
    write_file_durably(run.state_dir / "enroot.conf",
                       "# dlx: the trainer's variables, from the run's private environment file\n"
                       "environ() { cat \"$(dirname \"${BASH_SOURCE[0]}\")/container.env\"; }\n",
                       0600);
    // Not a login shell (enroot's default): that changes to $HOME first and fails where the image
    // has no such directory and no DEFAULT_HOME in its login.defs (Enroot 4.1.2, run here). The
    // trainer runs as under the other runtimes: from its working directory, no profile read.
    command.env.emplace_back("ENROOT_DATA_PATH", data_path.string());
    command.env.emplace_back("ENROOT_LOGIN_SHELL", "n");
    command.env.emplace_back("ENROOT_ROOTFS_WRITABLE", "n");  // the container is shared with later runs
    auto& argv = command.argv;
    argv = {program, "start", "--conf", (run.state_dir / "enroot.conf").string()};
    for (const auto& mount : run.mounts) {
      check_mount_path(mount.host, "enroot");
      check_mount_path(mount.container, "enroot");
      argv.emplace_back("--mount");
      argv.push_back(fmt::format("{}:{}:none:x-create=auto,rbind{}", mount.host.string(), mount.container.string(),
                                 mount.read_only ? ",ro" : ""));
    }
    argv.push_back(container);
    argv.insert(argv.end(), {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", run.workdir.string()});
    argv.insert(argv.end(), run.command.begin(), run.command.end());
    return command;
  }

 private:
  // docker://registry#name:tag is enroot's form: imported once per node into the user's directory,
  // named by the reference (again with force_pull_image), through a temporary name so that a
  // killed import is never taken for an image.
  static std::filesystem::path imported(const std::string& program, const ContainerRun& run,
                                        const std::filesystem::path& node_dir, std::vector<std::string>& notes) {
    const auto image = node_dir / fmt::format("enroot-{}.sqsh", short_sha256(run.image.text));
    const auto lock = lock_exclusively(image.string() + ".lock");
    std::error_code absent;
    if (!run.force_pull && std::filesystem::exists(image, absent)) return image;
    const auto ref = run.image.text.rfind("docker://", 0) == 0 ? run.image.text : "docker://" + run.image.text;
    const auto partial = image.string() + ".partial";
    std::filesystem::remove(partial, absent);
    run_checked({program, "import", "--output", partial, ref}, "import the image", std::chrono::minutes(30));
    std::filesystem::rename(partial, image);
    notes.push_back(fmt::format("enroot: {} imported on this node into {}", ref, image.string()));
    return image;
  }

  // The container of `image` on this node, unpacked by the first run that needs it, and this run's
  // shared hold on it (<name>.inuse).
  static std::pair<std::string, FileLock> unpacked(const std::string& program, const std::filesystem::path& image,
                                                   const std::filesystem::path& node_dir,
                                                   const std::filesystem::path& data_path,
                                                   std::vector<std::string>& notes) {
    struct stat status {};
    if (::stat(image.c_str(), &status) != 0) {
      throw ContainerError(fmt::format("cannot read the image {}: {}", image.string(), std::strerror(errno)));
    }
    const auto identity = fmt::format("{}\n{}\n{}.{:09}", std::filesystem::absolute(image).string(), status.st_size,
                                      status.st_mtim.tv_sec, status.st_mtim.tv_nsec);
    const auto name = "dlx-" + short_sha256(identity);
    auto in_use = open_lock(node_dir / (name + ".inuse"));
    in_use.lock(LockMode::shared);  // waits only while an older version's removal holds it
    const auto marker = node_dir / (name + ".unpacked");
    const auto ready = [&] {
      std::error_code absent;
      return std::filesystem::exists(marker, absent) && std::filesystem::is_directory(data_path / name, absent);
    };
    if (ready()) {
      notes.push_back(fmt::format("enroot: the image {} is unpacked on this node already: container {}", image.string(),
                                  name));
      return {name, std::move(in_use)};
    }
    const auto lock = lock_exclusively(node_dir / (name + ".lock"));
    if (ready()) {
      notes.push_back(fmt::format("enroot: the image {} was unpacked on this node by another run: container {}",
                                  image.string(), name));
      return {name, std::move(in_use)};
    }
    std::error_code absent;
    std::filesystem::remove(marker, absent);
    const auto start = std::chrono::steady_clock::now();
    run_checked({"/usr/bin/env", "ENROOT_DATA_PATH=" + data_path.string(), program, "create", "--force", "--name", name,
                 image.string()},
                "unpack the image", std::chrono::minutes(10));
    write_file_durably(marker, identity + "\n", 0600);
    notes.push_back(fmt::format(
        "enroot: the image {} unpacked once on this node, in {:.1f} s, into container {} of {} (later runs on this node "
        "start it again; removing that directory frees it)",
        image.string(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), name,
        data_path.string()));
    return {name, std::move(in_use)};
  }

  // The containers of older versions of `image` (markers with its path, under another name than
  // `current`) that no run uses and no run unpacks: removed (the protocol above).
  static void remove_older_versions(const std::string& program, const std::filesystem::path& image,
                                    const std::string& current, const std::filesystem::path& node_dir,
                                    const std::filesystem::path& data_path, std::vector<std::string>& notes) {
    const auto path_line = std::filesystem::absolute(image).string() + "\n";
    for (const auto& name : older_versions(node_dir, path_line, current)) {
      try {
        auto unpacking = open_lock(node_dir / (name + ".lock"));
        auto in_use = open_lock(node_dir / (name + ".inuse"));
        if (!unpacking.try_lock(LockMode::exclusive) || !in_use.try_lock(LockMode::exclusive)) {
          notes.push_back(fmt::format("enroot: container {} of an older version of {} is in use on this node: kept, "
                                      "for a later run to remove", name, image.string()));
          continue;
        }
        run_checked({"/usr/bin/env", "ENROOT_DATA_PATH=" + data_path.string(), program, "remove", "--force", name},
                    "remove the container of an older version", std::chrono::minutes(5));
        for (const char* suffix : {".unpacked", ".lock", ".inuse"}) std::filesystem::remove(node_dir / (name + suffix));
        notes.push_back(fmt::format("enroot: removed container {} of an older version of {} from this node", name,
                                    image.string()));
      } catch (const std::exception& error) {
        notes.push_back(fmt::format("enroot: could not remove container {} of an older version of {} (a later run "
                                    "tries again): {}", name, image.string(), error.what()));
      }
    }
  }

  // The names of the containers whose marker starts with `path_line` (the image's path), but `current`.
  static std::vector<std::string> older_versions(const std::filesystem::path& node_dir, const std::string& path_line,
                                                 const std::string& current) {
    constexpr std::string_view kMarker = ".unpacked";
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(node_dir, error)) {
      const auto file = entry.path().filename().string();
      if (!file.starts_with("dlx-") || !file.ends_with(kMarker)) continue;
      auto name = file.substr(0, file.size() - kMarker.size());
      if (name == current) continue;
      try {
        if (read_small_file(entry.path(), 16 * 1024).starts_with(path_line)) names.push_back(std::move(name));
      } catch (const std::exception&) {
        // not a marker dlx wrote: not taken for one
      }
    }
    return names;
  }

  static void run_checked(const std::vector<std::string>& argv, std::string_view what, std::chrono::milliseconds limit) {
    const auto result = run_bounded(argv, CommandLimits{.timeout = limit});
    if (result.exit_code != 0) {
      throw ContainerError(fmt::format("enroot could not {} ({} exited {}): {}", what, fmt::join(argv, " "),
                                       result.exit_code, result.err.substr(0, 500)));
    }
  }
};

}  // namespace

std::unique_ptr<Runtime> make_enroot() { return std::make_unique<Enroot>(); }

}  // namespace dlx::container::detail
