// SPDX-License-Identifier: Apache-2.0
// The container an experiment's trials run in (docs/containers.md), as the config reads it:
// dlx's `container:` section, Determined's environment.image ({cpu, cuda} too),
// force_pull_image and top-level bind_mounts, the site file's container: defaults; each bad
// input's message; the frozen snapshot reading back the same; convert-determined keeping them.
#include <catch2/catch.hpp>

#include <string>

#include "dlx/config/ignored_keys.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/site.hpp"
#include "dlx/config/snapshot.hpp"

using namespace dlx::config;

namespace {

const std::string kHead = "name: c\nentrypoint: python3 train.py\n"
                          "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n";

std::string error_of(const std::string& text, const SiteConfig* site = nullptr) {
  try {
    parse_experiment(kHead + text, "exp.yaml", site);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

Experiment parsed(const std::string& text, const SiteConfig* site = nullptr) {
  return parse_experiment(kHead + text, "exp.yaml", site);
}

}  // namespace

TEST_CASE("no image anywhere: trials run on the bare node", "[config][container]") {
  const auto experiment = parsed("");
  CHECK_FALSE(experiment.container.image_for(false));
  CHECK_FALSE(experiment.container.image_for(true));
  CHECK(experiment.container.runtime == "auto");
  CHECK(to_yaml(experiment).find("container") == std::string::npos);
}

TEST_CASE("dlx's container section: image, force_pull_image, bind_mounts, runtime", "[config][container]") {
  const auto experiment = parsed(
      "container:\n"
      "  image: /shared/images/torch.sif\n"
      "  force_pull_image: true\n"
      "  runtime: apptainer\n"
      "  bind_mounts:\n"
      "    - {host_path: /datasets/, container_path: /data, read_only: true}\n"
      "    - {host_path: /scratch}\n");
  const auto& container = experiment.container;
  CHECK(container.image_for(false) == "/shared/images/torch.sif");
  CHECK(container.force_pull);
  CHECK(container.runtime == "apptainer");
  REQUIRE(container.bind_mounts.size() == 2);
  CHECK(container.bind_mounts[0] == ContainerConfig::BindMount{"/datasets", "/data", true});
  CHECK(container.bind_mounts[1] == ContainerConfig::BindMount{"/scratch", "/scratch", false});
  // The snapshot reads back as the same container.
  const auto again = parse_experiment(to_yaml(experiment), "experiment.yaml");
  CHECK(again.container.image == container.image);
  CHECK(again.container.force_pull);
  CHECK(again.container.runtime == "apptainer");
  CHECK(again.container.bind_mounts == container.bind_mounts);
}

TEST_CASE("Determined's environment.image (one, or per kind), force_pull_image and bind_mounts", "[config][container]") {
  const auto experiment = parsed(
      "environment:\n"
      "  image: {cpu: determinedai/pytorch-cpu:0.38, cuda: 'docker://nvcr.io/nvidia/pytorch:24.05-py3'}\n"
      "  force_pull_image: true\n"
      "  environment_variables: [NCCL_DEBUG=INFO]\n"
      "bind_mounts:\n"
      "  - {host_path: /mnt/data, container_path: /data, read_only: true, propagation: rprivate}\n");
  const auto& container = experiment.container;
  CHECK(container.image_for(false) == "determinedai/pytorch-cpu:0.38");
  CHECK(container.image_for(true) == "docker://nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(container.force_pull);
  REQUIRE(container.bind_mounts.size() == 1);
  CHECK(container.bind_mounts[0].container_path == "/data");
  REQUIRE(experiment.environment.size() == 1);
  CHECK(experiment.environment[0].first == "NCCL_DEBUG");
  // No longer among the keys dlx ignores; convert-determined writes them as dlx's section.
  for (const auto& ignored : ignored_determined_keys(experiment)) {
    CHECK(ignored.find("image") == std::string::npos);
    CHECK(ignored.find("bind_mounts") == std::string::npos);
  }
  const auto converted = to_yaml_for_editing(experiment, "converted");
  CHECK(converted.find("cuda: \"docker://nvcr.io/nvidia/pytorch:24.05-py3\"") != std::string::npos);
  CHECK(converted.find("host_path: \"/mnt/data\"") != std::string::npos);
}

TEST_CASE("environment.image beside dlx's NAME: value variables", "[config][container]") {
  const auto experiment = parsed("environment: {image: /images/torch, OMP_NUM_THREADS: 4}\n");
  CHECK(experiment.container.image == "/images/torch");
  REQUIRE(experiment.environment.size() == 1);
  CHECK(experiment.environment[0] == std::pair<std::string, std::string>{"OMP_NUM_THREADS", "4"});
}

TEST_CASE("the site's container defaults, frozen with the experiment", "[config][container]") {
  const auto site = parse_site_config(
      "container: {runtime: podman, image_cache: /shared/dlx-images/, default_image: /shared/images/base.sif}\n",
      "site.yaml");
  const auto experiment = parsed("", &site);
  CHECK(experiment.container.runtime == "podman");
  CHECK(experiment.container.image_cache == "/shared/dlx-images");
  CHECK(experiment.container.image_for(false) == "/shared/images/base.sif");
  // The experiment's own image wins over the site's default.
  CHECK(parsed("container: {image: /mine.sif}\n", &site).container.image_for(false) == "/mine.sif");
  const auto again = parse_experiment(to_yaml(experiment), "experiment.yaml");
  CHECK(again.container.runtime == "podman");
  CHECK(again.container.default_image == "/shared/images/base.sif");
  // A site file may not name an image for everyone's bind mounts.
  CHECK_THROWS_WITH(parse_site_config("container: {bind_mounts: []}\n", "site.yaml"),
                    Catch::Contains("container.bind_mounts") && Catch::Contains("unknown key"));
}

TEST_CASE("bad container input: each with where, what and the fix", "[config][container]") {
  CHECK_THAT(error_of("container: {runtime: podmn, image: /x}\n"),
             Catch::Contains("container.runtime") && Catch::Contains("did you mean 'podman'"));
  CHECK_THAT(error_of("environment: {image: 'docker://me:secret@registry.example/x:1'}\n"),
             Catch::Contains("environment.image: holds credentials") && Catch::Contains("podman login"));
  CHECK_THAT(error_of("container: {image: ''}\n"), Catch::Contains("container.image: must be an image reference"));
  CHECK_THAT(error_of("container: {image: '~/img.sif'}\n"), Catch::Contains("'~' is not expanded"));
  CHECK_THAT(error_of("container: {image: [a, b]}\n"), Catch::Contains("must be an image reference"));
  CHECK_THAT(error_of("environment: {image: {rocm: x}}\n"), Catch::Contains("names no cpu: or cuda: image"));
  CHECK_THAT(error_of("environment: {image: {cuda: a, gpu: b}}\n"), Catch::Contains("gives the CUDA image twice"));
  CHECK_THAT(error_of("bind_mounts: [{host_path: data}]\n"),
             Catch::Contains("bind_mounts[0].host_path") && Catch::Contains("is not an absolute path"));
  CHECK_THAT(error_of("bind_mounts: [{container_path: /data}]\n"),
             Catch::Contains("bind_mounts[0]") && Catch::Contains("host_path"));
  CHECK_THAT(error_of("bind_mounts: [{host_path: /a, container_path: /}]\n"), Catch::Contains("would hide the whole image"));
  CHECK_THAT(error_of("bind_mounts: [{host_path: /a, container_path: /d}, {host_path: /b, container_path: /d/}]\n"),
             Catch::Contains("mounts /d a second time"));
  CHECK_THAT(error_of("bind_mounts: {host_path: /a}\n"), Catch::Contains("bind_mounts: must be a list of mounts"));
  CHECK_THAT(error_of("bind_mounts: [{host_path: /a, readonly: true}]\n"), Catch::Contains("did you mean 'read_only'"));
  CHECK_THAT(error_of("container: {image: /a.sif}\nenvironment: {image: /b.sif}\n"),
             Catch::Contains("environment.image: names the image a second time"));
  CHECK_THAT(error_of("container: {bind_mounts: [{host_path: /a}]}\nbind_mounts: [{host_path: /b}]\n"),
             Catch::Contains("bind_mounts: lists mounts a second time"));
}
