// SPDX-License-Identifier: Apache-2.0
// The container runtime back ends (launcher/container) on their own: image references sorted by
// kind, the skeleton root an OCI runtime starts in, the OCI spec dlx writes, and the command lines
// of Apptainer, Enroot and Podman held to their documented CLIs (apptainer exec --cleanenv --bind
// SRC:DST[:ro] --pwd --nv; enroot create/start --mount fstab-form --env NAME; podman run --rootfs
// --volume --env-file), run against stand-in programs that record how they were called where the
// runtime is not installed here; the choice of a runtime; the variables and GPUs dlx-launch gives
// a container. The real runtimes run trials in tests/cluster/container_test.sh.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dlx/common/bounded_command.hpp"
#include "dlx/container/image_cache.hpp"
#include "dlx/container/image_ref.hpp"
#include "dlx/container/oci_spec.hpp"
#include "dlx/container/rootfs_skeleton.hpp"
#include "dlx/container/runtime.hpp"
#include "container_checks.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/launch/trial_container.hpp"
#include "searcher_temp_dir.hpp"
#include "stand_in_programs.hpp"

namespace fs = std::filesystem;
using namespace dlx::container;
using dlx::testing::OnlyPath;
using dlx::testing::stand_in;

namespace {

void write(const fs::path& path, const std::string& text, fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool contains_sequence(const std::vector<std::string>& argv, const std::vector<std::string>& sequence) {
  return std::search(argv.begin(), argv.end(), sequence.begin(), sequence.end()) != argv.end();
}

ContainerRun sample_run(const ImageRef& image, const fs::path& state_dir) {
  ContainerRun run;
  run.image = image;
  run.mounts = {{"/shared/exp", "/shared/exp", false}, {"/datasets", "/data", true}};
  run.env = {{"DLX_TRIAL_ID", "3"}, {"PATH", "/usr/bin:/bin"}};
  run.workdir = "/local/code-1";
  run.command = {"python3", "train.py", "--lr", "0.1"};
  run.name = "dlx-7_0-r0";
  run.state_dir = state_dir;
  return run;
}

}  // namespace

TEST_CASE("image references are sorted by what they name", "[container]") {
  dlx::testing::TempDir temp;
  CHECK(classify_image("docker://nvcr.io/nvidia/pytorch:24.05-py3").kind == ImageRef::Kind::registry);
  CHECK(classify_image("docker://nvcr.io/nvidia/pytorch:24.05-py3").registry_name == "nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(classify_image("determinedai/pytorch-ngc:0.38.0").kind == ImageRef::Kind::registry);
  CHECK(classify_image("oci-archive:/images/a.tar").kind == ImageRef::Kind::oci_archive);
  CHECK(classify_image("oci-archive:/images/a.tar").path == "/images/a.tar");
  CHECK(classify_image("oci:/images/layout").kind == ImageRef::Kind::oci_layout);
  CHECK(classify_image("/images/missing.sqsh").kind == ImageRef::Kind::squashfs);
  CHECK(classify_image("/images/missing.sif").kind == ImageRef::Kind::sif);
  // By content: a squashfs's magic whatever its name; a SIF's at byte 32.
  write(temp.path / "image.img", std::string("hsqs") + std::string(60, '\0'));
  CHECK(classify_image((temp.path / "image.img").string()).kind == ImageRef::Kind::squashfs);
  write(temp.path / "image2.img", "#!/usr/bin/env run-singularity\n\x00" + std::string("SIF_MAGIC") + std::string(20, '\0'));
  CHECK(classify_image((temp.path / "image2.img").string()).kind == ImageRef::Kind::sif);
  // Directories: an OCI layout, a bundle (rootfs/), a root file system.
  write(temp.path / "layout" / "oci-layout", "{}");
  write(temp.path / "layout" / "index.json", "{}");
  CHECK(classify_image((temp.path / "layout").string()).kind == ImageRef::Kind::oci_layout);
  fs::create_directories(temp.path / "bundle" / "rootfs" / "usr");
  const auto bundle = classify_image((temp.path / "bundle").string());
  CHECK(bundle.kind == ImageRef::Kind::rootfs);
  CHECK(bundle.rootfs() == temp.path / "bundle" / "rootfs");
  CHECK(classify_image((temp.path / "bundle" / "rootfs").string()).rootfs() == temp.path / "bundle" / "rootfs");
}

TEST_CASE("the skeleton root: image entries bound whole, mirrored on a mount's way, mount points made", "[container]") {
  dlx::testing::TempDir temp;
  const auto image = temp.path / "image";
  fs::create_directories(image / "usr" / "bin");
  fs::create_directories(image / "etc" / "ssl");
  fs::create_directories(image / "home");
  write(image / "etc" / "passwd", "root:x:0:0::/root:/bin/sh\n");
  write(image / "etc" / "hosts", "127.0.0.1 localhost\n");
  fs::create_symlink("usr/bin", image / "bin");
  const auto skeleton = temp.path / "skeleton";
  fs::create_directories(skeleton);
  const auto binds = build_rootfs_skeleton(image, skeleton,
                                           {{"/etc/hosts", true}, {"/home/alice/exp"}, {"/work/code"}, {"/proc"}});
  const auto bound = [&](const std::string& container) {
    return std::find_if(binds.begin(), binds.end(), [&](const Mount& m) { return m.container == container; });
  };
  // usr is on no mount's way: bound whole, read-only; bin the same link.
  REQUIRE(bound("/usr") != binds.end());
  CHECK(bound("/usr")->host == image / "usr");
  CHECK(bound("/usr")->read_only);
  CHECK(fs::read_symlink(skeleton / "bin") == "usr/bin");
  // etc holds a mount point: mirrored; its other entries bound one by one; hosts made a file.
  CHECK(bound("/etc") == binds.end());
  CHECK(bound("/etc/passwd") != binds.end());
  CHECK(bound("/etc/ssl") != binds.end());
  CHECK(bound("/etc/hosts") == binds.end());
  CHECK(fs::is_regular_file(skeleton / "etc" / "hosts"));
  // home (in the image) mirrored down to the mount point; work (not in it) made.
  CHECK(bound("/home") == binds.end());
  CHECK(fs::is_directory(skeleton / "home" / "alice" / "exp"));
  CHECK(fs::is_directory(skeleton / "work" / "code"));
  CHECK(fs::is_directory(skeleton / "proc"));
  // The image itself is untouched.
  CHECK_FALSE(fs::exists(image / "work"));
  CHECK_FALSE(fs::exists(image / "home" / "alice"));
  CHECK_THROWS_AS(build_rootfs_skeleton(temp.path / "none", skeleton, {}), ContainerError);
}

TEST_CASE("the OCI spec: read-only skeleton root, the user mapped to root, host namespaces but mount and user",
          "[container]") {
  dlx::testing::TempDir temp;
  auto run = sample_run(classify_image(temp.path.string()), temp.path);
  const auto spec = oci_spec(run, temp.path / "rootfs", {{"/img/usr", "/usr", true}}, {1000, 1000}, {"/dev/nvidia2"});
  CHECK(spec["root"]["path"] == (temp.path / "rootfs").string());
  CHECK(spec["root"]["readonly"] == true);
  CHECK(spec["process"]["args"] == nlohmann::json({"python3", "train.py", "--lr", "0.1"}));
  CHECK(spec["process"]["cwd"] == "/local/code-1");
  CHECK(spec["process"]["env"] == nlohmann::json({"DLX_TRIAL_ID=3", "PATH=/usr/bin:/bin"}));
  CHECK(spec["process"]["noNewPrivileges"] == true);
  CHECK(spec["process"]["capabilities"]["bounding"].empty());
  CHECK(spec["process"]["user"]["uid"] == 0);
  CHECK(spec["linux"]["uidMappings"][0] == nlohmann::json({{"containerID", 0}, {"hostID", 1000}, {"size", 1}}));
  std::vector<std::string> namespaces;
  for (const auto& ns : spec["linux"]["namespaces"]) namespaces.push_back(ns["type"]);
  CHECK(namespaces == std::vector<std::string>{"mount", "user"});  // network, PIDs, IPC: the host's
  std::vector<std::string> destinations;
  for (const auto& mount : spec["mounts"]) destinations.push_back(mount["destination"]);
  // The image's binds first, the kernel's file systems, the GPU, then the trial's mounts.
  CHECK(destinations.front() == "/usr");
  CHECK(std::find(destinations.begin(), destinations.end(), "/dev/nvidia2") != destinations.end());
  CHECK(destinations.back() == "/data");
  CHECK(spec["mounts"].back()["options"].back() == "ro");
  // As root: no user namespace, the trainer is root.
  const auto as_root = oci_spec(run, temp.path / "rootfs", {}, {0, 0}, {});
  CHECK(as_root["linux"]["namespaces"].size() == 1);
  CHECK_FALSE(as_root["linux"].contains("uidMappings"));
}

TEST_CASE("apptainer exec: --cleanenv, the variables as APPTAINERENV_, HOME by --home, --bind, --pwd, --nv", "[container]") {
  dlx::testing::TempDir temp;
  stand_in(temp.path / "bin", "apptainer", temp.path / "calls");
  OnlyPath path(temp.path / "bin");
  const auto runtime = make_runtime("apptainer");
  CHECK_FALSE(runtime->unavailable(false));
  CHECK_FALSE(runtime->refuses(classify_image("/images/a.sif")));
  auto run = sample_run(classify_image("/images/a.sif"), temp.path);
  run.gpus = {1};
  run.env.emplace_back("HOME", "/home/alice");
  const auto command = runtime->command(run);
  const auto& argv = command.argv;
  CHECK(argv[0] == (temp.path / "bin" / "apptainer").string());
  // HOME by --home: Apptainer ignores APPTAINERENV_HOME (Apptainer 1.4.5 ran here says so).
  CHECK(contains_sequence(argv, {"--no-home", "--home", "/home/alice"}));
  CHECK(std::none_of(command.env.begin(), command.env.end(), [](const auto& var) { return var.first.ends_with("HOME"); }));
  CHECK(contains_sequence(argv, {"exec", "--cleanenv", "--no-home"}));
  CHECK(contains_sequence(argv, {"--bind", "/shared/exp:/shared/exp"}));
  CHECK(contains_sequence(argv, {"--bind", "/datasets:/data:ro"}));
  CHECK(contains_sequence(argv, {"--pwd", "/local/code-1", "--nv", "/images/a.sif", "python3", "train.py"}));
  CHECK(std::find(command.env.begin(), command.env.end(), std::pair<std::string, std::string>{"APPTAINERENV_DLX_TRIAL_ID", "3"}) !=
        command.env.end());
  // Values never on the command line (other users read argv).
  CHECK(std::none_of(argv.begin(), argv.end(), [](const auto& arg) { return arg.find("DLX_TRIAL_ID") != std::string::npos; }));
  // A registry reference as docker://; a path with ':' is refused rather than split.
  run.image = classify_image("nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(runtime->command(run).argv[std::size_t(std::find(argv.begin(), argv.end(), "/images/a.sif") - argv.begin())] ==
        "docker://nvcr.io/nvidia/pytorch:24.05-py3");
  run.mounts = {{"/a:b", "/c", false}};
  CHECK_THROWS_WITH(runtime->command(run), Catch::Contains("cannot mount /a:b"));
  // So is a HOME that --home would split.
  run.mounts.clear();
  run.env.back().second = "/home/a:b";
  CHECK_THROWS_WITH(runtime->command(run), Catch::Contains("apptainer cannot mount /home/a:b: its mount option splits "
                                                           "paths at ':' and ','"));
}

TEST_CASE("each runtime is asked its version as its CLI has it: enroot version, the others --version",
          "[container]") {
  // Enroot 4.1.2, run here, has no --version option (it exits 1): its back end was refused on
  // every node until it asked `enroot version`.
  for (const auto& [name, expected] : std::vector<std::pair<std::string, std::string>>{
           {"enroot", "version\n--\n"}, {"apptainer", "--version\n--\n"}, {"podman", "--version\n--\n"}}) {
    dlx::testing::TempDir temp;
    stand_in(temp.path / "bin", name, temp.path / "calls");
    OnlyPath path(temp.path / "bin");
    CAPTURE(name);
    CHECK_FALSE(make_runtime(name)->unavailable(false));
    CHECK(read(temp.path / "calls") == expected);
  }
}

// A stand-in for enroot that keeps what it was asked (one argument per line, then "--") and
// behaves as enroot does where the back end reads the result: `create --name N` makes the
// container's directory $ENROOT_DATA_PATH/N, `import --output F` writes F, `remove --force N`
// removes N's directory (and fails while it holds a file "busy").
void enroot_stand_in(const fs::path& dir, const fs::path& calls) {
  fs::create_directories(dir);
  std::ofstream(dir / "enroot") << "#!/bin/sh\nPATH=/usr/bin:/bin\n"
                                << "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" << calls.string() << "'\n"
                                << "echo -- >> '" << calls.string() << "'\n"
                                << "case $1 in\n"
                                << "  create) mkdir -p \"$ENROOT_DATA_PATH/$4\" ;;\n"
                                << "  import) echo squashfs > \"$3\" ;;\n"
                                << "  remove) if [ -e \"$ENROOT_DATA_PATH/$3/busy\" ]; then echo \"$3: busy\" >&2; exit 1; fi\n"
                                << "          rm -r \"$ENROOT_DATA_PATH/$3\" ;;\n"
                                << "esac\n";
  fs::permissions(dir / "enroot", fs::perms::owner_all);
}

TEST_CASE("enroot: unpacked once per node and image, started with fstab-form mounts and the variables by --conf",
          "[container]") {
  dlx::testing::TempDir temp;
  enroot_stand_in(temp.path / "bin", temp.path / "calls");
  OnlyPath path(temp.path / "bin");
  const auto runtime = make_runtime("enroot");
  CHECK_THAT(*runtime->refuses(classify_image("/images/a.sif")), Catch::Contains("enroot runs squashfs images"));
  const auto image = temp.path / "torch.sqsh";
  std::ofstream(image) << "squashfs";
  auto run = sample_run(classify_image(image.string()), temp.path / "node" / "dlx-7_0-r0");
  fs::create_directories(run.state_dir);
  run.gpus = {0, 3};
  const auto command = runtime->command(run);
  // The first run unpacks the image into a container named by the file's identity, and says so.
  const auto calls = read(temp.path / "calls");
  CHECK_THAT(calls, Catch::StartsWith("create\n--force\n--name\ndlx-"));
  CHECK_THAT(calls, Catch::EndsWith("\n" + image.string() + "\n--\n"));
  const auto container = calls.substr(std::string("create\n--force\n--name\n").size(), 4 + 16);
  CHECK(fs::exists(temp.path / "node" / (container + ".unpacked")));
  CHECK(fs::is_directory(temp.path / "node" / "enroot" / container));  // dlx's own ENROOT_DATA_PATH, node-local
  REQUIRE(command.notes.size() == 1);
  CHECK_THAT(command.notes[0], Catch::Contains("unpacked once on this node") && Catch::Contains(container));
  const auto& argv = command.argv;
  const auto conf = run.state_dir / "enroot.conf";
  CHECK(contains_sequence(argv, {"start", "--conf", conf.string(), "--mount", "/shared/exp:/shared/exp:none:x-create=auto,rbind"}));
  CHECK(contains_sequence(argv, {"--mount", "/datasets:/data:none:x-create=auto,rbind,ro", container, "/bin/sh", "-c"}));
  CHECK(contains_sequence(argv, {"/local/code-1", "python3", "train.py", "--lr", "0.1"}));
  // enroot runs with dlx-launch's environment (its PATH finds enroot's helpers; Enroot 4.1.2, run
  // here, failed with "enroot-nsenter: not found" under the image's PATH), dlx's data path, not as
  // a login shell, read-only; the trainer's variables, NVIDIA's hook's too, come from the configuration script's
  // environ(), as Enroot runs it.
  CHECK(command.env == std::vector<std::pair<std::string, std::string>>{
                           {"ENROOT_DATA_PATH", (temp.path / "node" / "enroot").string()},
                           {"ENROOT_LOGIN_SHELL", "n"},
                           {"ENROOT_ROOTFS_WRITABLE", "n"}});
  CHECK(std::find(argv.begin(), argv.end(), "--env") == argv.end());
  CHECK((fs::status(conf).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK((fs::status(run.state_dir / "container.env").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  const auto printed = dlx::run_bounded({"/bin/bash", "-c", "PATH=/usr/bin:/bin; source \"$0\" && environ", conf.string()},
                                        dlx::CommandLimits{.timeout = std::chrono::seconds(10)});
  CHECK(printed.exit_code == 0);
  CHECK(printed.out == "DLX_TRIAL_ID=3\nPATH=/usr/bin:/bin\nNVIDIA_VISIBLE_DEVICES=0,3\n");

  // The next run on the node starts the same container: no second unpack.
  fs::remove(temp.path / "calls");
  run.state_dir = temp.path / "node" / "dlx-8_0-r0";
  fs::create_directories(run.state_dir);
  const auto again = runtime->command(run);
  CHECK_FALSE(fs::exists(temp.path / "calls"));
  CHECK(contains_sequence(again.argv, {container, "/bin/sh"}));
  REQUIRE(again.notes.size() == 1);
  CHECK_THAT(again.notes[0], Catch::Contains("unpacked on this node already"));
  // An unpack that was killed left no marker: redone. A container its user removed: redone.
  for (const auto& undo : {std::function<void()>([&] { fs::remove(temp.path / "node" / (container + ".unpacked")); }),
                           std::function<void()>([&] { fs::remove(temp.path / "node" / "enroot" / container); })}) {
    undo();
    fs::remove(temp.path / "calls");
    runtime->command(run);
    CHECK_THAT(read(temp.path / "calls"), Catch::Contains("create\n--force\n--name\n" + container + "\n"));
  }
  // A new version of the image file is a new container.
  fs::remove(temp.path / "calls");
  fs::last_write_time(image, fs::last_write_time(image) + std::chrono::seconds(5));
  const auto newer = runtime->command(run);
  CHECK_THAT(read(temp.path / "calls"), Catch::StartsWith("create\n--force\n--name\ndlx-"));
  CHECK(std::find(newer.argv.begin(), newer.argv.end(), container) == newer.argv.end());

  // A registry reference is imported once per node beside the runs' directories (through a
  // temporary name), then unpacked as a file is.
  fs::remove(temp.path / "calls");
  run.image = classify_image("docker://nvcr.io#nvidia/pytorch:24.05-py3");
  runtime->command(run);
  const auto imported = read(temp.path / "calls");
  CHECK_THAT(imported, Catch::StartsWith("import\n--output\n" + (temp.path / "node").string() + "/enroot-"));
  CHECK_THAT(imported, Catch::Contains(".sqsh.partial\ndocker://nvcr.io#nvidia/pytorch:24.05-py3\n--\ncreate"));
  fs::remove(temp.path / "calls");
  runtime->command(run);
  CHECK_FALSE(fs::exists(temp.path / "calls"));
  // An image file gone since sbatch checked it: said, with the path.
  run.image = classify_image((temp.path / "gone.sqsh").string());
  CHECK_THROWS_WITH(runtime->command(run),
                    "cannot read the image " + (temp.path / "gone.sqsh").string() + ": No such file or directory");
  // Nothing is removed after a run: the container is for the next.
  runtime->cleanup(run);
  CHECK_FALSE(fs::exists(temp.path / "calls"));
}

TEST_CASE("enroot: the runs of a newer image file remove the older versions' containers no run holds",
          "[container]") {
  dlx::testing::TempDir temp;
  enroot_stand_in(temp.path / "bin", temp.path / "calls");
  OnlyPath path(temp.path / "bin");
  const auto runtime = make_runtime("enroot");
  const auto node = temp.path / "node";
  const auto image = temp.path / "torch.sqsh";
  const auto other = temp.path / "other.sqsh";
  std::ofstream(image) << "squashfs";
  std::ofstream(other) << "squashfs";
  int runs = 0;
  const auto run_of = [&](const fs::path& file) {
    auto run = sample_run(classify_image(file.string()), node / fmt::format("dlx-{}_0-r0", ++runs));
    fs::create_directories(run.state_dir);
    return run;
  };
  const auto container_of = [&](const RuntimeCommand& command) {
    const auto at = std::find(command.argv.begin(), command.argv.end(), "/bin/sh");
    REQUIRE(at != command.argv.begin());
    return *(at - 1);
  };
  const auto newer_version = [&] { fs::last_write_time(image, fs::last_write_time(image) + std::chrono::seconds(5)); };
  const auto gone = [&](const std::string& name) {
    return !fs::exists(node / "enroot" / name) && !fs::exists(node / (name + ".unpacked")) &&
           !fs::exists(node / (name + ".lock")) && !fs::exists(node / (name + ".inuse"));
  };

  auto running = runtime->command(run_of(image));  // still running: it holds its container
  const auto first = container_of(running);
  REQUIRE(running.held.size() == 1);
  CHECK(running.held[0].held());
  const auto another_image = container_of(runtime->command(run_of(other)));  // done: holds nothing now

  // A new version while the first run goes on: unpacked anew, the old container kept.
  newer_version();
  auto second_run = runtime->command(run_of(image));
  const auto second = container_of(second_run);
  CHECK(second != first);
  CHECK(fs::exists(node / (first + ".unpacked")));
  CHECK(fs::is_directory(node / "enroot" / first));
  CHECK_THAT(fmt::format("{}", fmt::join(second_run.notes, "\n")),
             Catch::Contains("container " + first + " of an older version of " + image.string() +
                             " is in use on this node: kept, for a later run to remove"));

  // Once that run has ended, the next run of the new version removes it; another image's
  // container is not an older version of this one.
  running = RuntimeCommand{};
  second_run = RuntimeCommand{};
  fs::remove(temp.path / "calls");
  auto third_run = runtime->command(run_of(image));
  CHECK(container_of(third_run) == second);
  CHECK_THAT(read(temp.path / "calls"), Catch::Equals("remove\n--force\n" + first + "\n--\n"));
  CHECK(gone(first));
  CHECK_THAT(third_run.notes.back(), Catch::Equals("enroot: removed container " + first + " of an older version of " +
                                                   image.string() + " from this node"));
  CHECK(fs::is_directory(node / "enroot" / second));
  CHECK(fs::is_directory(node / "enroot" / another_image));
  CHECK(fs::exists(node / (another_image + ".unpacked")));

  // A removal that fails is said and tried again by a later run; the run itself goes on.
  third_run = RuntimeCommand{};
  std::ofstream(node / "enroot" / second / "busy") << "";
  newer_version();
  const auto fourth_run = runtime->command(run_of(image));
  CHECK(container_of(fourth_run) != second);
  CHECK_THAT(fourth_run.notes.back(), Catch::StartsWith("enroot: could not remove container " + second) &&
                                          Catch::Contains("a later run tries again") && Catch::Contains(second + ": busy"));
  CHECK(fs::exists(node / (second + ".unpacked")));
  fs::remove(node / "enroot" / second / "busy");
  const auto fifth_run = runtime->command(run_of(image));
  CHECK(gone(second));
  CHECK_THAT(fifth_run.notes.back(), Catch::Contains("removed container " + second));
}

TEST_CASE("podman run: as the user, host network and PIDs, --env-file, --volume, a skeleton --rootfs, CDI-less GPUs", "[container]") {
  dlx::testing::TempDir temp;
  stand_in(temp.path / "bin", "podman", temp.path / "calls");
  OnlyPath path(temp.path / "bin");
  const auto runtime = make_runtime("podman");
  CHECK_THAT(*runtime->refuses(classify_image("/images/a.sif")), Catch::Contains("podman runs no SIF file"));
  fs::create_directories(temp.path / "image" / "usr" / "bin");
  fs::create_directories(temp.path / "state");
  auto run = sample_run(classify_image((temp.path / "image").string()), temp.path / "state");
  const auto argv = runtime->command(run).argv;
  CHECK(contains_sequence(argv, {"run", "--rm", "--replace", "--name", "dlx-7_0-r0", "--network", "host", "--pid", "host"}));
  CHECK(contains_sequence(argv, {"--user", "0:0"}));  // the user, not the image's USER
  CHECK(contains_sequence(argv, {"--env-file", (temp.path / "state" / "container.env").string()}));
  CHECK(read(temp.path / "state" / "container.env") == "DLX_TRIAL_ID=3\nPATH=/usr/bin:/bin\n");
  struct stat env_file {};
  REQUIRE(::stat((temp.path / "state" / "container.env").c_str(), &env_file) == 0);
  CHECK((env_file.st_mode & 0777) == 0600);
  CHECK(contains_sequence(argv, {"--volume", (temp.path / "image" / "usr").string() + ":/usr:ro"}));
  CHECK(contains_sequence(argv, {"--volume", "/datasets:/data:ro"}));
  CHECK(contains_sequence(argv, {"--workdir", "/local/code-1"}));
  CHECK(contains_sequence(argv, {"--rootfs", (temp.path / "state" / "rootfs").string(), "python3", "train.py"}));
  CHECK(fs::is_directory(temp.path / "state" / "rootfs" / "shared" / "exp"));
  // A registry image: podman's own storage, pulled again with force_pull_image.
  run.image = classify_image("docker://registry.example/team/torch:2");
  run.force_pull = true;
  const auto pulled = runtime->command(run).argv;
  CHECK(contains_sequence(pulled, {"--pull=always", "docker://registry.example/team/torch:2", "python3"}));
}

TEST_CASE("podman's own word that it could not start the trainer's program, told from the trainer's exit", "[container]") {
  const auto podman = make_runtime("podman");
  const std::string not_found =
      "Error: runc: runc create failed: unable to start container process: exec: \"pyhton3\": executable file "
      "not found in $PATH: OCI runtime attempted to invoke a command that was not found";
  const std::string crun_not_found =
      "Error: crun: executable file `pyhton3` not found in $PATH: No such file or directory: OCI runtime "
      "attempted to invoke a command that was not found";
  const std::string denied =
      "Error: runc: runc create failed: unable to start container process: exec: \"/etc/passwd\": permission "
      "denied: OCI permission denied";
  CHECK(podman->could_not_run_program(127, not_found));
  CHECK(podman->could_not_run_program(127, crun_not_found));
  CHECK(podman->could_not_run_program(126, denied));
  CHECK_FALSE(podman->could_not_run_program(126, not_found));  // the status must match the words
  CHECK_FALSE(podman->could_not_run_program(1, not_found));
  // The trainer's own exit 127 (a script calling a missing command), and podman's other errors
  // (a pull that failed: exit 125, perhaps passing), stay crashes.
  CHECK_FALSE(podman->could_not_run_program(127, "train.sh: line 3: nvidia-smi: command not found"));
  CHECK_FALSE(podman->could_not_run_program(125, "Error: initializing source docker://localhost/x:1: pinging "
                                                 "container registry localhost: connection refused"));
  CHECK_FALSE(make_runtime("crun")->could_not_run_program(127, not_found));
}

TEST_CASE("podman's own word that it could not start a container on the node at all", "[container]") {
  const auto podman = make_runtime("podman");
  const std::string hybrid = "Error: OCI runtime error: crun: cgroups in hybrid mode not supported, drop all "
                             "controllers from cgroupv2";
  CHECK(podman->could_not_start_container(126, hybrid));
  CHECK_FALSE(podman->could_not_start_container(1, hybrid));  // the status must match the words
  // The program's failure (could_not_run_program), the trainer's own exit 126, and Podman's own
  // errors (exit 125: a pull that failed may pass) are not the node's.
  CHECK_FALSE(podman->could_not_start_container(
      126, "Error: runc: runc create failed: unable to start container process: exec: \"/etc/passwd\": "
           "permission denied: OCI permission denied"));
  CHECK_FALSE(podman->could_not_start_container(126, "train.sh: line 3: ./prepare: Permission denied"));
  CHECK_FALSE(podman->could_not_start_container(125, "Error: initializing source docker://localhost/x:1: "
                                                     "pinging container registry localhost: connection refused"));
  CHECK_FALSE(make_runtime("crun")->could_not_start_container(126, hybrid));
}

TEST_CASE("choosing a runtime: the site's, or the first that runs the image", "[container]") {
  dlx::testing::TempDir temp;
  fs::create_directories(temp.path / "bin");
  stand_in(temp.path / "bin", "apptainer", temp.path / "calls");
  OnlyPath path(temp.path / "bin");
  CHECK(choose_runtime("auto", classify_image("/images/a.sif"))->name() == "apptainer");
  CHECK_THROWS_WITH(choose_runtime("enroot", classify_image("/images/a.sqsh")),
                    Catch::Contains("the site's container runtime enroot cannot run here: enroot is not installed"));
  CHECK_NOTHROW(choose_runtime("apptainer", classify_image("/images/a.sif")));
  fs::remove(temp.path / "bin" / "apptainer");
  CHECK_THROWS_WITH(choose_runtime("auto", classify_image("/images/a.sif")),
                    Catch::Contains("no container runtime on this node runs /images/a.sif") &&
                        Catch::Contains("podman: podman runs no SIF file") && Catch::Contains("dlx doctor"));
  CHECK_THROWS_WITH(make_runtime("docker"), Catch::Contains("unknown container runtime 'docker'"));
}

TEST_CASE("what a container gets from dlx-launch: variables and GPUs", "[container][launcher]") {
  dlx::config::Experiment experiment;
  experiment.environment = {{"WANDB_MODE", "offline"}, {"PYTHONPATH", "/opt/mylib"}};
  const dlx::env::EnvMap env{{"DLX_TRIAL_ID", "2"}, {"SLURM_JOB_ID", "7"}, {"RANK", "1"}, {"MASTER_ADDR", "n1"},
                             {"PATH", "/host/bin"}, {"LD_LIBRARY_PATH", "/host/lib"}, {"SECRET_TOKEN", "x"},
                             {"NCCL_DEBUG", "INFO"}, {"CUDA_VISIBLE_DEVICES", "0"}, {"HOME", "/home/a"}};
  const auto vars = dlx::launch::container_variables(env, experiment, true, true);
  const auto value = [&](const std::string& name) -> std::optional<std::string> {
    for (const auto& [key, val] : vars) {
      if (key == name) return val;
    }
    return std::nullopt;
  };
  CHECK(value("DLX_TRIAL_ID") == "2");
  CHECK(value("SLURM_JOB_ID") == "7");
  CHECK(value("RANK") == "1");
  CHECK(value("MASTER_ADDR") == "n1");
  CHECK(value("NCCL_DEBUG") == "INFO");
  CHECK(value("CUDA_VISIBLE_DEVICES") == "0");
  CHECK(value("HOME") == "/home/a");
  CHECK(value("WANDB_MODE") == "offline");  // the experiment's, whatever its name
  CHECK_FALSE(value("SECRET_TOKEN"));       // the host's others stay out
  CHECK_FALSE(value("LD_LIBRARY_PATH"));
  CHECK(value("PATH").value_or("").find("/usr/bin") != std::string::npos);
  CHECK(value("PATH").value_or("").find("/host/bin") == std::string::npos);
  CHECK(value("PYTHONPATH") == "/dlx/python/dlx/compat:/dlx/python:/opt/mylib");
  CHECK(value("DLX_LIBRARY") == "/dlx/lib/libdlx_c.so.0");
  CHECK(dlx::launch::trial_gpus({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}) == std::vector<int>{2, 3});
  CHECK(dlx::launch::trial_gpus({{"CUDA_VISIBLE_DEVICES", "1"}}) == std::vector<int>{1});
  CHECK(dlx::launch::trial_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-8f2a"}}).empty());
  CHECK(dlx::launch::trial_gpus({}).empty());
}

TEST_CASE("dlx doctor: one verdict per runtime, a warning when none works", "[container][doctor]") {
  using dlx::doctor::Verdict;
  const auto findings = dlx::doctor::check_container_runtimes([](std::string_view runtime) -> std::optional<std::string> {
    if (runtime == "podman") return std::nullopt;
    if (runtime == "crun") return "crun cannot start a container here (exit 1): cgroups in hybrid mode not supported";
    return std::string(runtime) + " is not installed (not in PATH)";
  });
  REQUIRE(findings.size() == 4);
  CHECK(findings[0].verdict == Verdict::skipped);
  CHECK(findings[1].check == "container runtime podman");
  CHECK(findings[1].verdict == Verdict::ok);
  CHECK(findings[3].verdict == Verdict::warn);
  CHECK_THAT(findings[3].found, Catch::Contains("installed, but crun cannot start a container here"));
  CHECK_THAT(findings[3].advice, Catch::Contains("site file's container: runtime"));
  // Podman on crun where the cgroups are a v1/v2 hybrid: the containers.conf that runs it.
  const auto hybrid = dlx::doctor::check_container_runtimes([](std::string_view runtime) -> std::optional<std::string> {
    if (runtime == "podman") {
      return "podman cannot start a container here (exit 126): Error: OCI runtime error: crun: cgroups in hybrid "
             "mode not supported, drop all controllers from cgroupv2";
    }
    return std::string(runtime) + " is not installed (not in PATH)";
  });
  REQUIRE(hybrid.size() == 5);
  CHECK(hybrid[1].verdict == Verdict::warn);
  CHECK_THAT(hybrid[1].found, Catch::Contains("installed, but podman cannot start a container here (exit 126)"));
  CHECK_THAT(hybrid[1].advice, Catch::Contains("set runtime = \"runc\" and cgroup_manager = \"cgroupfs\" under "
                                               "[engine] in /etc/containers/containers.conf"));
  const auto none = dlx::doctor::check_container_runtimes(
      [](std::string_view runtime) -> std::optional<std::string> { return std::string(runtime) + " is not installed"; });
  REQUIRE(none.size() == 5);
  CHECK(none.back().verdict == Verdict::warn);
  CHECK(none.back().found == "none starts a container on this host");
}

TEST_CASE("dlx doctor: which libdlx_c containers get", "[container][doctor]") {
  using dlx::doctor::Verdict;
  const fs::path portable_file("/usr/lib/x86_64-linux-gnu/dlx/container/libdlx_c.so.0");
  const fs::path own_file("/usr/lib/x86_64-linux-gnu/libdlx_c.so.0");
  CHECK(dlx::launch::is_portable_library(portable_file));
  CHECK_FALSE(dlx::launch::is_portable_library(own_file));
  CHECK_FALSE(dlx::launch::is_portable_library("/opt/container/libdlx_c.so.0"));
  const auto portable = dlx::doctor::check_container_sdk(portable_file, true);
  CHECK(portable.verdict == Verdict::ok);
  CHECK_THAT(portable.found, Catch::Contains("the portable libdlx_c /usr/lib/x86_64-linux-gnu/dlx/container/"));
  const auto own = dlx::doctor::check_container_sdk(own_file, false);
  CHECK(own.verdict == Verdict::warn);
  CHECK_THAT(own.found, Catch::Contains("dlx's own libdlx_c /usr/lib/x86_64-linux-gnu/libdlx_c.so.0"));
  CHECK_THAT(own.advice, Catch::Contains("scripts/portable-c.sh) and install it as "
                                         "/usr/lib/x86_64-linux-gnu/dlx/container/libdlx_c.so.0"));
  const auto none = dlx::doctor::check_container_sdk(std::nullopt, false);
  CHECK(none.verdict == Verdict::warn);
  CHECK_THAT(none.found, Catch::Contains("no libdlx_c.so.0 beside this dlx"));
}

namespace {

// An OCI layout of the given layer directories, made by tests/container/make_oci_layout.py.
void make_layout(const fs::path& layout, const std::vector<fs::path>& layers, const std::string& extra = "") {
  std::string command = "/usr/bin/python3 " DLX_SOURCE_DIR "/tests/container/make_oci_layout.py " + layout.string();
  for (const auto& layer : layers) command += " --layer " + layer.string();
  command += " " + extra + " > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
}

}  // namespace

TEST_CASE("an OCI image converted once: layers in order, whiteouts, modes, and found the second time", "[container][image]") {
  dlx::testing::TempDir temp;
  const auto l1 = temp.path / "l1", l2 = temp.path / "l2";
  write(l1 / "etc" / "a", "one\n");
  write(l1 / "usr" / "share" / "keep" / "x", "kept\n");
  write(l1 / "usr" / "share" / "gone" / "y", "gone\n");
  write(l1 / "opq" / "old", "old\n");
  write(l2 / "etc" / "b", "two\n");
  write(l2 / "usr" / "share" / ".wh.gone", "");
  write(l2 / "opq" / ".wh..wh..opq", "");
  write(l2 / "opq" / "new", "new\n");
  write(l2 / "usr" / "share" / "keep" / "z", "added below a read-only directory\n");
  fs::permissions(l1 / "usr" / "share" / "keep", fs::perms(0555));
  make_layout(temp.path / "layout", {l1, l2}, "--gzip --archive " + (temp.path / "image.tar").string());
  const auto cache = temp.path / "cache";
  const auto first = cached_rootfs(classify_image((temp.path / "layout").string()), cache, nullptr);
  CHECK(first.converted);
  CHECK(first.digest.rfind("sha256:", 0) == 0);
  const auto rootfs = first.dir / "rootfs";
  CHECK(read(rootfs / "etc" / "a") == "one\n");
  CHECK(read(rootfs / "etc" / "b") == "two\n");
  CHECK(read(rootfs / "usr" / "share" / "keep" / "x") == "kept\n");
  CHECK(read(rootfs / "usr" / "share" / "keep" / "z") == "added below a read-only directory\n");
  CHECK((fs::status(rootfs / "usr" / "share" / "keep").permissions() & fs::perms::owner_write) == fs::perms::none);
  CHECK_FALSE(fs::exists(rootfs / "usr" / "share" / "gone"));
  CHECK_FALSE(fs::exists(rootfs / "usr" / "share" / ".wh.gone"));
  CHECK_FALSE(fs::exists(rootfs / "opq" / "old"));
  CHECK(read(rootfs / "opq" / "new") == "new\n");
  // The same image again, and as an OCI archive: the same entry, found, not converted.
  const auto again = cached_rootfs(classify_image((temp.path / "layout").string()), cache, nullptr);
  CHECK_FALSE(again.converted);
  const auto archived = cached_rootfs(classify_image("oci-archive:" + (temp.path / "image.tar").string()), cache, nullptr);
  CHECK_FALSE(archived.converted);
  CHECK(archived.dir == first.dir);
  // A conversion killed midway (its partial directory left, the entry never renamed into place)
  // never counts: the next one removes it and converts again.
  remove_image_tree(first.dir);
  const auto partial = cache / (first.digest.substr(7) + ".partial-node9-12345");
  write(partial / "rootfs" / "half-written", "x");
  const auto redone = cached_rootfs(classify_image((temp.path / "layout").string()), cache, nullptr);
  CHECK(redone.converted);
  CHECK_FALSE(fs::exists(partial));
  CHECK(read(redone.dir / "rootfs" / "etc" / "b") == "two\n");
  remove_image_tree(cache);
  CHECK_FALSE(fs::exists(cache));
}

TEST_CASE("a hostile OCI image writes nothing outside its root, and a damaged one is refused", "[container][image][security]") {
  dlx::testing::TempDir temp;
  const auto outside = temp.path / "outside";
  write(outside / "victim", "keep me\n");
  // Layer 1 makes a link out of the root; layer 2 writes through it and whiteouts through it.
  const auto l1 = temp.path / "l1", l2 = temp.path / "l2";
  fs::create_directories(l1);
  fs::create_symlink(outside, l1 / "evil");
  write(l2 / "evil" / ".wh.victim", "");
  write(l2 / "evil" / "planted", "x");
  make_layout(temp.path / "layout", {l1, l2}, "--files-only");
  const auto contained = cached_rootfs(classify_image((temp.path / "layout").string()), temp.path / "cache", nullptr);
  // The link on the way was replaced by a directory of the image's own (libarchive's secure
  // extraction with unlink); the whiteout through the link removed nothing.
  CHECK(read(outside / "victim") == "keep me\n");
  CHECK_FALSE(fs::exists(outside / "planted"));
  CHECK_FALSE(fs::is_symlink(contained.dir / "rootfs" / "evil"));
  CHECK(read(contained.dir / "rootfs" / "evil" / "planted") == "x");
  // A blob that is not what its digest says.
  const auto l3 = temp.path / "l3";
  write(l3 / "etc" / "a", "one\n");
  make_layout(temp.path / "layout2", {l3});
  for (const auto& blob : fs::directory_iterator(temp.path / "layout2" / "blobs" / "sha256")) {
    if (fs::file_size(blob.path()) > 1000) {  // the layer (the config and manifest are smaller)
      std::ofstream(blob.path(), std::ios::app) << "tampered";
    }
  }
  CHECK_THROWS_WITH(cached_rootfs(classify_image((temp.path / "layout2").string()), temp.path / "cache", nullptr),
                    Catch::Contains("does not match its digest"));
  // Not an OCI layout at all; another user's cache directory.
  fs::create_directories(temp.path / "empty");
  write(temp.path / "empty" / "index.json", "{}");
  write(temp.path / "empty" / "oci-layout", "{}");
  CHECK_THROWS_WITH(cached_rootfs(classify_image((temp.path / "empty").string()), temp.path / "cache", nullptr),
                    Catch::Contains("index.json lists no manifest"));
  fs::create_directories(temp.path / "shared-cache");
  fs::permissions(temp.path / "shared-cache", fs::perms(0777));
  CHECK_THROWS_WITH(cached_rootfs(classify_image((temp.path / "layout").string()), temp.path / "shared-cache", nullptr),
                    Catch::Contains("is not yours alone"));
}

TEST_CASE("two trials that need the same new OCI image at once convert it once", "[container][image]") {
  dlx::testing::TempDir temp;
  write(temp.path / "l1" / "etc" / "a", "one\n");
  for (int i = 0; i < 200; ++i) write(temp.path / "l1" / "files" / std::to_string(i), std::string(4096, 'x'));
  make_layout(temp.path / "layout", {temp.path / "l1"});
  const auto image = classify_image((temp.path / "layout").string());
  // Two threads, each with its own lock descriptor (an OFD lock: as two processes, or two nodes).
  std::vector<CachedImage> results(2);
  std::vector<std::thread> trials;
  for (std::size_t i = 0; i < results.size(); ++i) {
    trials.emplace_back([&, i] { results[i] = cached_rootfs(image, temp.path / "cache", nullptr); });
  }
  for (auto& trial : trials) trial.join();
  CHECK(results[0].converted != results[1].converted);  // exactly one converted, the other found it
  CHECK(results[0].dir == results[1].dir);
  CHECK(read(results[0].dir / "rootfs" / "etc" / "a") == "one\n");
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(temp.path / "cache")) entries += entry.is_directory();
  CHECK(entries == 1);  // no partial conversion left beside it
}
