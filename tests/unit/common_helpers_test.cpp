// SPDX-License-Identifier: Apache-2.0
// common/'s small helpers that several layers share: the names of a uid (accounts.hpp), this
// host's name (host_name.hpp), little-endian integers (little_endian.hpp) and the CPUs a process
// may use (usable_cpus.hpp).
#include <catch2/catch.hpp>

#include <pwd.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>

#include "dlx/common/accounts.hpp"
#include "dlx/common/host_name.hpp"
#include "dlx/common/little_endian.hpp"
#include "dlx/common/usable_cpus.hpp"

namespace {

// A uid the passwd database does not know (asked directly, not through the code under test).
uid_t uid_without_passwd_entry() {
  uid_t uid = 4000000;
  while (::getpwuid(uid) != nullptr) ++uid;
  return uid;
}

}  // namespace

TEST_CASE("account_name is the passwd name, else the uid in digits, as paths and %u want it", "[common]") {
  CHECK(dlx::account_name(0) == "root");
  const uid_t unknown = uid_without_passwd_entry();
  CHECK(dlx::account_name(unknown) == std::to_string(unknown));
  CHECK_FALSE(dlx::passwd_entry(unknown).has_value());
  const auto root = dlx::passwd_entry(0);
  REQUIRE(root.has_value());
  CHECK(root->name == "root");
  CHECK(root->gid == 0);
}

TEST_CASE("user_name_of is the passwd name, else 'uid N', as messages want it", "[common]") {
  CHECK(dlx::user_name_of(0) == "root");
  const uid_t unknown = uid_without_passwd_entry();
  CHECK(dlx::user_name_of(unknown) == "uid " + std::to_string(unknown));
}

TEST_CASE("host_name is gethostname's name", "[common]") {
  std::array<char, 256> expected{};
  REQUIRE(::gethostname(expected.data(), expected.size() - 1) == 0);
  CHECK(dlx::host_name() == expected.data());
}

TEST_CASE("little-endian integers: the low byte first, read back from any offset", "[common]") {
  std::string bytes = "x";
  dlx::append_little_endian<std::uint32_t>(bytes, 0x04030201u);
  dlx::append_little_endian<std::uint64_t>(bytes, 0x0807060504030201ull);
  dlx::append_little_endian<std::uint16_t>(bytes, 0xfeffu);
  CHECK(bytes == std::string("x\x01\x02\x03\x04\x01\x02\x03\x04\x05\x06\x07\x08\xff\xfe", 15));
  CHECK(dlx::read_little_endian<std::uint32_t>(bytes, 1) == 0x04030201u);
  CHECK(dlx::read_little_endian<std::uint64_t>(bytes, 5) == 0x0807060504030201ull);
  CHECK(dlx::read_little_endian<std::uint16_t>(bytes, 13) == 0xfeffu);
  std::string high;
  dlx::append_little_endian<std::uint64_t>(high, UINT64_MAX);
  CHECK(dlx::read_little_endian<std::uint64_t>(high) == UINT64_MAX);
}

TEST_CASE("usable_cpus counts the affinity mask, not the machine", "[common]") {
  cpu_set_t before;
  REQUIRE(::sched_getaffinity(0, sizeof(before), &before) == 0);
  CHECK(dlx::usable_cpus() == static_cast<unsigned>(CPU_COUNT(&before)));
  cpu_set_t one;  // the first allowed CPU alone, as a step bound to one CPU has it
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  REQUIRE(::sched_setaffinity(0, sizeof(one), &one) == 0);
  const unsigned bound = dlx::usable_cpus();
  REQUIRE(::sched_setaffinity(0, sizeof(before), &before) == 0);
  CHECK(bound == 1);
}
