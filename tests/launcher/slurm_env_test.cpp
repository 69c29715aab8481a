// SPDX-License-Identifier: Apache-2.0
// The Slurm-environment reader: table tests over fake environments (no Slurm needed).
#include <catch2/catch.hpp>

#include "dlx/slurm/hostlist.hpp"
#include "dlx/slurm/task_placement.hpp"
#include "dlx/slurm/tasks_per_node.hpp"

using dlx::env::EnvError;
using dlx::env::EnvMap;
using dlx::env::Launcher;

TEST_CASE("launcher: Slurm task counts per node are expanded", "[slurm]") {
  struct Row {
    const char* spec;
    std::vector<int> nodes;
  };
  auto row = GENERATE(Row{"1", {1}}, Row{"4", {4}}, Row{"2(x3)", {2, 2, 2}},
                      Row{"2(x3),1", {2, 2, 2, 1}}, Row{"1,2,3", {1, 2, 3}},
                      Row{"8(x2),4(x1),2", {8, 8, 4, 2}});
  CAPTURE(row.spec);
  CHECK(dlx::slurm::parse_tasks_per_node("SLURM_TASKS_PER_NODE", row.spec) == row.nodes);
}

TEST_CASE("launcher: malformed task counts name the variable and the value", "[slurm]") {
  auto spec = GENERATE("", "x", "2(3)", "2(x)", "2(x0)", "2(x3", "-1", "2,,1", "1,");
  CAPTURE(spec);
  CHECK_THROWS_WITH(dlx::slurm::parse_tasks_per_node("SLURM_STEP_TASKS_PER_NODE", spec),
                    Catch::StartsWith("SLURM_STEP_TASKS_PER_NODE=") &&
                        Catch::Contains("task count list"));
}

TEST_CASE("launcher: the first host comes from libslurm's host list expansion", "[slurm]") {
  struct Row {
    const char* list;
    const char* first;
  };
  auto row = GENERATE(Row{"n1", "n1"}, Row{"n[1-3]", "n1"}, Row{"gpu[07-09,12]", "gpu07"},
                      Row{"a[3-4],b1", "a3"}, Row{"node-x,node-y", "node-x"});
  CAPTURE(row.list);
  CHECK(dlx::slurm::first_host("SLURM_STEP_NODELIST", row.list) == row.first);
}

TEST_CASE("launcher: GPU lists", "[slurm]") {
  using V = std::vector<std::string>;
  CHECK(dlx::slurm::parse_gpu_list("") == V{});
  CHECK(dlx::slurm::parse_gpu_list("NoDevFiles") == V{});
  CHECK(dlx::slurm::parse_gpu_list("0") == V{"0"});
  CHECK(dlx::slurm::parse_gpu_list("0,1,3") == V{"0", "1", "3"});
  CHECK(dlx::slurm::parse_gpu_list("GPU-1a2b,GPU-3c4d") == V{"GPU-1a2b", "GPU-3c4d"});
}

namespace {

EnvMap srun_env() {
  return {{"SLURM_JOB_ID", "4242"},           {"SLURM_PROCID", "3"},
          {"SLURM_STEP_NUM_TASKS", "5"},      {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", "2"},              {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}, {"SLURM_STEP_NODELIST", "n[4-6]"},
          {"SLURM_JOB_NODELIST", "n[1-9]"},   {"SLURMD_NODENAME", "n6"},
          {"SLURM_NTASKS", "99"}};
}

}  // namespace

TEST_CASE("launcher: placement under srun", "[slurm]") {
  auto p = dlx::slurm::read_task_placement(srun_env(), "host");
  CHECK(p.launcher == Launcher::srun);
  CHECK(p.rank == 3);
  CHECK(p.world_size == 5);  // the step's count, not SLURM_NTASKS
  CHECK(p.local_rank == 0);
  CHECK(p.node_index == 2);
  CHECK(p.num_nodes == 3);
  CHECK(p.tasks_per_node == std::vector<int>{2, 2, 1});
  CHECK(p.local_world_size == 1);  // node 2 runs one task
  CHECK(p.first_node == "n4");     // the step's list, not the job's
  CHECK(p.node_name == "n6");
  CHECK(p.job_id == "4242");
}

TEST_CASE("launcher: placement falls back to the job-level Slurm variables", "[slurm]") {
  EnvMap env{{"SLURM_PROCID", "1"},        {"SLURM_STEP_NUM_TASKS", "2"},
             {"SLURM_LOCALID", "1"},       {"SLURM_NODEID", "0"},
             {"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_NTASKS_PER_NODE", "2"},
             {"SLURM_JOB_NODELIST", "c[10-11]"}};
  auto p = dlx::slurm::read_task_placement(env, "myhost");
  CHECK(p.num_nodes == 1);
  CHECK(p.local_world_size == 2);
  CHECK(p.tasks_per_node.empty());
  CHECK(p.first_node == "c10");
  CHECK(p.node_name == "myhost");
}

TEST_CASE("launcher: mpirun's variables win over the batch shell's SLURM_PROCID", "[slurm]") {
  EnvMap env{{"SLURM_PROCID", "0"},
             {"SLURM_JOB_ID", "7"},
             {"OMPI_COMM_WORLD_RANK", "2"},
             {"OMPI_COMM_WORLD_SIZE", "3"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}};
  auto p = dlx::slurm::read_task_placement(env, "h");
  CHECK(p.launcher == Launcher::mpirun);
  CHECK(p.rank == 2);
  CHECK(p.world_size == 3);
  CHECK(p.local_rank == 2);
  CHECK(p.local_world_size == 3);

  env.erase("OMPI_COMM_WORLD_RANK");
  env["PMIX_RANK"] = "1";
  CHECK(dlx::slurm::read_task_placement(env, "h").rank == 1);
}

TEST_CASE("launcher: no launcher: one process", "[slurm]") {
  auto p = dlx::slurm::read_task_placement({{"SLURM_PROCID", "0"}}, "laptop");  // batch shell
  CHECK(p.launcher == Launcher::none);
  CHECK(p.rank == 0);
  CHECK(p.world_size == 1);
  CHECK(p.node_name == "laptop");
  CHECK(p.first_node.empty());
}

TEST_CASE("launcher: GPUs: CUDA_VISIBLE_DEVICES, then SLURM_STEP_GPUS, then SLURM_JOB_GPUS", "[slurm]") {
  EnvMap env{{"SLURM_JOB_GPUS", "0,1,2,3"}};
  CHECK(dlx::slurm::read_task_placement(env, "h").gpus.size() == 4);
  env["SLURM_STEP_GPUS"] = "2,3";
  CHECK(dlx::slurm::read_task_placement(env, "h").gpus == std::vector<std::string>{"2", "3"});
  env["CUDA_VISIBLE_DEVICES"] = "";  // set but empty: no GPU
  CHECK(dlx::slurm::read_task_placement(env, "h").gpus.empty());
}

TEST_CASE("launcher: malformed or inconsistent placement is an error naming the variable", "[slurm]") {
  struct Row {
    const char* name;
    const char* value;
    const char* message;
  };
  auto row = GENERATE(Row{"SLURM_PROCID", "x", "SLURM_PROCID=x is not a non-negative integer"},
                      Row{"SLURM_PROCID", "-1", "SLURM_PROCID=-1"},
                      Row{"SLURM_PROCID", "5", "rank 5 is not below the world size 5"},
                      Row{"SLURM_STEP_NUM_TASKS", "", "SLURM_STEP_NUM_TASKS="},
                      Row{"SLURM_LOCALID", "1", "local rank 1 is not below the local world size 1"},
                      Row{"SLURM_STEP_TASKS_PER_NODE", "2(y2)", "SLURM_STEP_TASKS_PER_NODE=2(y2)"});
  auto env = srun_env();
  env[row.name] = row.value;
  CAPTURE(row.name, row.value);
  CHECK_THROWS_AS(dlx::slurm::read_task_placement(env, "h"), EnvError);
  CHECK_THROWS_WITH(dlx::slurm::read_task_placement(env, "h"), Catch::Contains(row.message));
}
