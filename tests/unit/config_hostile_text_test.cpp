// SPDX-License-Identifier: Apache-2.0
// Hostile text in experiment files: values far longer than any real one (std::regex's recursion
// overflowed the stack on them, in dlx validate, sbatch and slurmstepd), control characters in
// what messages and tables show, and the hand-written syntax checks that replaced the regexes.
#include <catch2/catch.hpp>

#include <string>

#include "dlx/config/display_text.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/config/syntax.hpp"

using namespace dlx::config;

namespace {

const std::string kHead = "name: a\nentrypoint: x\nsearcher: {name: single, metric: m}\n";

std::string error_of(const std::string& text) {
  try {
    parse_experiment(text, "exp.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("syntax checks accept what the regexes accepted and nothing else", "[config][syntax]") {
  for (const char* good : {"0", "4096", "64G", "1K", "7T", "12M"}) CHECK(is_slurm_memory(good));
  for (const char* bad : {"", "G", "4 GB", "64g", "64GB", "-1", "1.5G", "64G "}) CHECK_FALSE(is_slurm_memory(bad));

  for (const char* good : {"30", "2:00:00", "1-12", "1-12:00", "1-12:00:00", "0:1", "00"}) CHECK(is_slurm_time(good));
  for (const char* bad : {"", "1h", "1-", "-5", ":30", "1:2:3:4", "1-2-3", "1-2:3:4:5", "1::2", "1 "}) {
    CHECK_FALSE(is_slurm_time(bad));
  }

  for (const char* good : {"gpu", "a100_80g", "debug.short", "x-1", "."}) CHECK(is_partition_name(good));
  for (const char* bad : {"", "gpu,cpu", "a b", "gpu\n", "gp\xc3\xbc"}) CHECK_FALSE(is_partition_name(bad));

  for (const char* good : {"A", "_x", "NCCL_SOCKET_IFNAME", "a1"}) CHECK(is_variable_name(good));
  for (const char* bad : {"", "1A", "A-B", "A.B", "A B", "\xc3\xa9"}) CHECK_FALSE(is_variable_name(bad));

  // "a.b" is one name since issue 20 (Determined allows it).
  for (const char* good : {"lr", "_x", "batch-size", "layer_2", "a.b"}) CHECK(is_hyperparameter_key(good));
  for (const char* bad : {"", "2x", "-x", "a b", "a$"}) CHECK_FALSE(is_hyperparameter_key(bad));

  // Linear: a million characters is one pass, not a million stack frames.
  const std::string long_digits(1'000'000, '7');
  CHECK(is_slurm_memory(long_digits + "G"));
  CHECK(is_slurm_time(long_digits + "-" + long_digits + ":" + long_digits));
  CHECK_FALSE(is_partition_name(long_digits + "/"));
}

TEST_CASE("100,000-character resources are refused by length, the value shown short", "[config][limits]") {
  const std::string huge(100'000, '1');
  struct Row {
    std::string key, value, expected;
  };
  auto row = GENERATE_COPY(values<Row>({
      {"partition", std::string(100'000, 'p'),
       "exp.yaml:4:24: resources.partition: is 100000 characters long, more than the limit of 255: "
       "'pppppppppppppppppppppppppppppppp... (100000 bytes)' (give a partition name as sinfo shows it)"},
      {"time_limit", huge, "resources.time_limit: is 100000 characters long, more than the limit of 255: "
                           "'11111111111111111111111111111111... (100000 bytes)' (use Slurm's --time syntax"},
      {"mem_per_node", huge + "G", "resources.mem_per_node: is 100001 characters long, more than the limit of 255"},
  }));
  const std::string message = error_of(kHead + "resources: {" + row.key + ": " + row.value + "}\n");
  CHECK_THAT(message, Catch::Contains(row.expected));
  CHECK(message.size() < 400);
  // At the limit the syntax decides.
  CHECK(error_of(kHead + "resources: {" + row.key + ": " + std::string(kMaxValueLength, '9') + "}\n") == "");
}

TEST_CASE("a 200 KB hyperparameter name is refused by length", "[config][limits]") {
  const std::string name(200'000, 'h');
  // An explicit key (? KEY): yaml-cpp refuses implicit keys over 1024 characters itself.
  const std::string message = error_of(kHead + "hyperparameters:\n  ? " + name + "\n  : 1\n");
  CHECK_THAT(message, Catch::StartsWith("exp.yaml:5:5: hyperparameters.hhhh"));
  CHECK_THAT(message, Catch::Contains("... (200016 bytes): the name is 200000 characters long, more than the "
                                      "limit of 255 (use a shorter name)"));
  CHECK(message.size() < 400);
  // The limit is on the whole dotted name (it names DLX_HP_...).
  const std::string group(200, 'g'), leaf(60, 'l');
  CHECK_THAT(error_of(kHead + "hyperparameters:\n  " + group + ":\n    " + leaf + ": 1\n"),
             Catch::Contains("the name is 261 characters long, more than the limit of 255"));
  CHECK(error_of(kHead + "hyperparameters:\n  " + group + ":\n    " + std::string(54, 'l') + ": 1\n") == "");
  CHECK_THAT(error_of(kHead + "hyperparameters:\n  \"a$(id)\": 1\n"),
             Catch::Contains("hyperparameters.a$(id): is not a valid hyperparameter name"));
}

TEST_CASE("long environment names, metric names and unknown keys are refused in one short line", "[config][limits]") {
  std::string message = error_of(kHead + "environment:\n  ? " + std::string(100'000, 'E') + "\n  : 1\n");
  CHECK_THAT(message, Catch::Contains("is 100000 characters long, more than the limit of 255 (use a shorter variable name)"));
  CHECK(message.size() < 400);
  message = error_of("name: a\nentrypoint: x\nsearcher: {name: single, metric: " + std::string(300, 'm') + "}\n");
  CHECK_THAT(message, Catch::Contains("searcher.metric: is 300 characters long, more than the limit of 255"));
  // An unknown key is not compared letter by letter with every known one when it is this long.
  message = error_of(kHead + "? " + std::string(200'000, 'k') + "\n: 1\n");
  CHECK_THAT(message, Catch::Contains("unknown key at the top level (known keys at the top level: name,"));
  CHECK(message.size() < 600);
  message = error_of(kHead + "hyperparameters:\n  x: {type: " + std::string(100'000, 't') + ", val: 1}\n");
  CHECK_THAT(message, Catch::Contains("unknown hyperparameter type 'tttt"));
  CHECK(message.size() < 400);
}

TEST_CASE("control characters in the file are escaped in messages", "[config][display]") {
  CHECK_THAT(error_of(kHead + "resources: {partition: \"gpu\\e]0;owned\\a\"}\n"),
             Catch::Contains("resources.partition: 'gpu\\x1b]0;owned\\x07' is not valid"));
  CHECK_THAT(error_of(kHead + "resources: {time_limit: \"1\\nexp.yaml:1:1: all good\"}\n"),
             Catch::Contains("'1\\nexp.yaml:1:1: all good' is not valid"));
  CHECK_THAT(error_of("name: \"a\\x9b2J\"\nentrypoint: x\nsearcher: {name: single, metric: m}\n"),
             Catch::Contains("name: 'a\\u009b2J' contains"));
}

TEST_CASE("printable: terminal controls become visible escapes, printable UTF-8 stays", "[config][display]") {
  struct Row {
    std::string text, shown;
  };
  auto row = GENERATE(values<Row>({
      {"plain text, ~!@#$%^&*()", "plain text, ~!@#$%^&*()"},
      {"two\nlines\r\tx", "two\\nlines\\r\\tx"},
      {"\x1b]0;title\x07", "\\x1b]0;title\\x07"},         // OSC: retitles the terminal
      {"\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"},      // CSI: clears the screen, colours
      {std::string("nul\0", 4) + "\x7f", "nul\\x00\\x7f"},
      {"\xc2\x9b" "2J \xc2\x85", "\\u009b2J \\u0085"},     // C1 controls encoded as UTF-8
      {"bad \xff\xfe tail \xc3", "bad \\xff\\xfe tail \\xc3"},  // not UTF-8
      {"\xc0\xaf \xed\xa0\x80", "\\xc0\\xaf \\xed\\xa0\\x80"},  // overlong form, surrogate
      {"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82"},
      {"a\xe2\x80\xae" "cba \xe2\x80\xa8", "a\\u202ecba \\u2028"},  // bidi override, line separator
      {"back\\slash \\n", "back\\slash \\n"},
  }));
  CHECK(printable(row.text) == row.shown);
  CHECK(printable(row.shown) == row.shown);  // idempotent: what it prints needs no second pass
}

TEST_CASE("abbreviated: cut at a character, never inside an escape, with the full size", "[config][display]") {
  CHECK(abbreviated("short") == "short");
  CHECK(abbreviated(std::string(64, 'x')) == std::string(64, 'x'));
  CHECK(abbreviated(std::string(65, 'x')) == std::string(64, 'x') + "... (65 bytes)");
  CHECK(abbreviated("abc\x1b" "def", 4) == "abc... (7 bytes)");
  CHECK(abbreviated("ab\xc3\xa9" "cd", 3) == "ab... (6 bytes)");
  CHECK(abbreviated("ab\xc3\xa9" "cd", 4) == "ab\xc3\xa9... (6 bytes)");
}

TEST_CASE("deep nesting far past yaml-cpp's own guard is an error, not a crash", "[config][limits]") {
  std::string deep = kHead + "x: ";
  deep += std::string(300'000, '[') + std::string(300'000, ']') + "\n";
  CHECK_THAT(error_of(deep), Catch::Contains("exp.yaml:4:") && Catch::Contains("YAML syntax error"));
  std::string mappings = kHead + "x: ";
  for (int i = 0; i < 100'000; ++i) mappings += "{a: ";
  mappings += "1" + std::string(100'000, '}') + "\n";
  CHECK_THAT(error_of(mappings), Catch::Contains("YAML syntax error"));
}
