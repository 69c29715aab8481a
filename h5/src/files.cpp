// SPDX-License-Identifier: Apache-2.0
// Opening and creating HDF5 files. Both go through a descriptor dlx opened and checked itself:
// HDF5 is then pointed at /proc/self/fd/<fd>, the file behind that descriptor, so the file it
// opens is the one that was checked (no second lookup of the path that another user could
// redirect in between). HDF5 1.10 has no call that takes a descriptor.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "dlx/common/error.hpp"
#include "dlx/common/file_copy.hpp"
#include "dlx/common/file_kind.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {
namespace {

std::string descriptor_path(int fd) { return fmt::format("/proc/self/fd/{}", fd); }

[[noreturn]] void throw_errno(const std::filesystem::path& path, std::string_view what, int error) {
  throw H5Error(fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(error)), error);
}

// HDF5 reaches the file through /proc/self/fd: say so when /proc is not there.
void require_descriptor_path(const std::string& proc_path, const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(proc_path.c_str(), &status) != 0)
    throw H5Error(fmt::format("{}: cannot reach it through {} ({}); dlx needs /proc mounted to "
                              "open HDF5 files safely",
                              path.string(), proc_path, std::strerror(errno)));
}

}  // namespace

namespace {

// One try of open_regular_file. nullopt when the file was replaced while HDF5 opened it: HDF5
// resolves /proc/self/fd/<fd> with realpath(), which fails once a writer's rename (temp + rename,
// as trial.h5 is rewritten every few seconds) has unlinked the file behind the descriptor.
std::optional<ReadOnlyFile> try_open_regular_file(const std::filesystem::path& path, Symlinks symlinks,
                                                  std::string_view kind) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever. It changes nothing
  // for a regular file, the only kind accepted below.
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (symlinks == Symlinks::refuse ? O_NOFOLLOW : 0);
  ReadOnlyFile out;
  out.fd = UniqueFd(::open(path.c_str(), flags));
  if (!out.fd) {
    int error = errno;
    if (error == ELOOP && symlinks == Symlinks::refuse)
      throw H5Error(fmt::format("{}: is a symbolic link; a {} is read only from a regular file, "
                                "never through a link",
                                path.string(), kind),
                    error);
    throw_errno(path, fmt::format("read {}", kind), error);
  }
  struct stat status {};
  if (::fstat(out.fd.get(), &status) != 0) throw_errno(path, fmt::format("read {}", kind), errno);
  if (S_ISDIR(status.st_mode))
    throw_format_error(path, fmt::format("is a directory, not a {}", kind));
  if (!S_ISREG(status.st_mode))
    throw_format_error(path, fmt::format("not a regular file ({}), so not a {}",
                                         describe_file_kind(status.st_mode), kind));
  out.bytes = static_cast<std::uint64_t>(status.st_size);
  const auto proc_path = descriptor_path(out.fd.get());
  require_descriptor_path(proc_path, path);
  if (check_tri(H5Fis_hdf5(proc_path.c_str()), path, "check the HDF5 signature") == 0)
    throw_format_error(path, fmt::format("not an HDF5 file (no HDF5 signature), so not a {}",
                                         kind));
  const hid_t file = H5Fopen(proc_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    struct stat now {};
    if (::fstat(out.fd.get(), &now) == 0 && now.st_nlink == 0) return std::nullopt;
  }
  out.file = Handle(check_id(file, path, "open HDF5 file (damaged or truncated?)"), H5Fclose);
  return out;
}

}  // namespace

ReadOnlyFile open_regular_file(const std::filesystem::path& path, Symlinks symlinks,
                               std::string_view kind) {
  // A file replaced while it was opened is opened again, by its path: what the caller asked for
  // is the file there now. A writer that replaces it faster than it can be opened, many times
  // over, makes the last try's error the answer.
  constexpr int kTries = 5;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    if (auto opened = try_open_regular_file(path, symlinks, kind)) return std::move(*opened);
  }
  throw H5Error(fmt::format("{}: cannot open HDF5 file: it was replaced {} times while it was being opened",
                            path.string(), kTries));
}

Handle open_file_read_only(const std::filesystem::path& path) {
  return open_regular_file(path, Symlinks::follow, "HDF5 file").file;
}

namespace {

// Created with at most kFileMode (the umask can only take bits away), then set to exactly
// kFileMode before any byte is written. O_NOFOLLOW: a symbolic link planted at the name is not
// followed (O_EXCL already refuses it; said twice on purpose). Removed again on failure.
UniqueFd create_private_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kFileMode));
  if (!fd) throw_errno(path, "create HDF5 file", errno);
  if (::fchmod(fd.get(), kFileMode) != 0) {
    int error = errno;
    ::unlink(path.c_str());
    throw_errno(path, "set the mode of the new file", error);
  }
  return fd;
}

// Semi: closing the file fails (is reported) if an object inside it were still open.
Handle writer_access(const std::filesystem::path& path) {
  Handle access(check_id(H5Pcreate(H5P_FILE_ACCESS), path, "create file access properties"),
                H5Pclose);
  check(H5Pset_fclose_degree(access.get(), H5F_CLOSE_SEMI), path, "set file close degree");
  return access;
}

}  // namespace

Handle create_file_copy(const std::filesystem::path& path, int source_fd) {
  auto fd = create_private_file(path);
  try {
    if (::lseek(source_fd, 0, SEEK_SET) < 0) throw_errno(path, "rewind the file to copy", errno);
    copy_file_data(source_fd, fd.get(), fmt::format("/proc/self/fd/{}", source_fd), path);
  } catch (const SystemError& error) {
    ::unlink(path.c_str());
    throw H5Error(fmt::format("{}: cannot copy the previous file into it: {}", path.string(), error.what()),
                  error.error_number());
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
  const auto proc_path = descriptor_path(fd.get());
  auto access = writer_access(path);
  hid_t id = H5Fopen(proc_path.c_str(), H5F_ACC_RDWR, access.get());
  if (id < 0) {
    int saved = errno;
    ::unlink(path.c_str());
    errno = saved;
    throw_error(path, "open the copied HDF5 file for writing");
  }
  return Handle(id, H5Fclose);
}

Handle create_file(const std::filesystem::path& path, const FileOptions& options) {
  auto access = writer_access(path);
  if (options.checksummed_metadata)
    check(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), path,
          "choose the checksummed file format");
  if (options.alignment > 0)
    check(H5Pset_alignment(access.get(), 64 * 1024, options.alignment), path, "set alignment");
  Handle creation(check_id(H5Pcreate(H5P_FILE_CREATE), path, "create file creation properties"),
                  H5Pclose);
  check(H5Pset_attr_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
        path, "track attribute creation order");

  auto fd = create_private_file(path);
  auto discard = [&] { ::unlink(path.c_str()); };
  const auto proc_path = descriptor_path(fd.get());
  // TRUNC on the empty file dlx just made: the name must exist for HDF5 to open it, and O_EXCL
  // above already guaranteed that it did not exist before.
  hid_t id = H5Fcreate(proc_path.c_str(), H5F_ACC_TRUNC, creation.get(), access.get());
  if (id < 0) {
    int saved = errno;
    discard();
    errno = saved;
    throw_error(path, "create HDF5 file");
  }
  return Handle(id, H5Fclose);
}

}  // namespace dlx::h5
