// SPDX-License-Identifier: Apache-2.0
// The two shapes of a trial's hyperparameters (config/hparam_tree.hpp): the flat names the
// searcher and records hold, the nested object DLX_HPARAMS gives a trainer, and lookups by name.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dlx/config/hparam_tree.hpp"

using dlx::config::HparamTreeError;
using nlohmann::ordered_json;

TEST_CASE("config: flat names nest by their dots, in order, as Determined passes groups", "[hparam_tree]") {
  const auto flat = ordered_json::parse(
      R"({"batch":64,"optim.lr":0.1,"model.depth":3,"optim.momentum":0.9,"model.act.kind":"relu"})");
  CHECK(dlx::config::nest_hyperparameters(flat).dump() ==
        R"({"batch":64,"optim":{"lr":0.1,"momentum":0.9},"model":{"depth":3,"act":{"kind":"relu"}}})");
  CHECK(dlx::config::nest_hyperparameters(ordered_json::object()) == ordered_json::object());
}

TEST_CASE("config: a value that is a mapping, a list or null stays a leaf when nesting", "[hparam_tree]") {
  const auto flat = ordered_json::parse(
      R"({"aug":{"flip":true,"crop":[32,32]},"opt.betas":[0.9,0.99],"opt.clip":null,"opt.extra":{}})");
  CHECK(dlx::config::nest_hyperparameters(flat).dump() ==
        R"({"aug":{"flip":true,"crop":[32,32]},"opt":{"betas":[0.9,0.99],"clip":null,"extra":{}}})");
}

TEST_CASE("config: names that cannot nest are refused with both names and the fix", "[hparam_tree]") {
  CHECK_THROWS_WITH(dlx::config::nest_hyperparameters(ordered_json::parse(R"({"a":1,"a.b":2})")),
                    "hyperparameter 'a' is a value and also the group of 'a.b', so the two cannot "
                    "be passed nested (rename one of them)");
  CHECK_THROWS_WITH(dlx::config::nest_hyperparameters(ordered_json::parse(R"({"a.b.c":1,"a.b":2})")),
                    "hyperparameter 'a.b' is a value and also the group of 'a.b.c', so the two "
                    "cannot be passed nested (rename one of them)");
  CHECK_THROWS_WITH(dlx::config::nest_hyperparameters(ordered_json::parse(R"({"a..b":1})")),
                    "hyperparameter name 'a..b' has an empty part between dots (each part of a "
                    "dotted name names a group or a hyperparameter)");
  CHECK_THROWS_AS(dlx::config::nest_hyperparameters(ordered_json::parse(R"({".a":1})")), HparamTreeError);
  CHECK_THROWS_WITH(dlx::config::nest_hyperparameters(ordered_json::array()),
                    "hyperparameters must be a JSON object, not array");
}

TEST_CASE("config: a name is found by its dotted path or as a literal key", "[hparam_tree]") {
  const auto tree = ordered_json::parse(
      R"({"optim":{"lr":0.1,"sched":{"kind":"cos"}},"a.b":1,"a":{"c":2},"x.y":{"z":3}})");
  auto find = [&](const char* name) { return dlx::config::find_hyperparameter(tree, name); };
  REQUIRE(find("optim.lr"));
  CHECK(*find("optim.lr") == 0.1);
  CHECK(*find("optim.sched.kind") == "cos");
  CHECK(*find("optim") == ordered_json::parse(R"({"lr":0.1,"sched":{"kind":"cos"}})"));
  CHECK(*find("a.b") == 1);  // a literal key (Determined allows '.' in a name) beside a group "a"
  CHECK(*find("a.c") == 2);
  CHECK(*find("x.y.z") == 3);  // the literal key "x.y", then its member
  CHECK(find("optim.beta") == nullptr);
  CHECK(find("optim.lr.x") == nullptr);  // a number has no members
  CHECK(find("") == nullptr);
}

TEST_CASE("config: nested back to flat, by the experiment's names or by shape", "[hparam_tree]") {
  const auto tree = ordered_json::parse(R"({"optim":{"lr":0.1},"aug":{"flip":true},"empty":{}})");
  const std::vector<std::string> names{"optim.lr", "aug", "empty", "not.there"};
  CHECK(dlx::config::flatten_hyperparameters(tree, names).dump() ==
        R"({"optim.lr":0.1,"aug":{"flip":true},"empty":{}})");
  CHECK(dlx::config::flatten_hyperparameters(tree).dump() ==
        R"({"optim.lr":0.1,"aug.flip":true,"empty":{}})");
  // Round trip: nesting and flattening by the same names gives the flat object back.
  const auto flat = ordered_json::parse(R"({"b":1,"g.x":[1],"g.y":{"k":null}})");
  const std::vector<std::string> flat_names{"b", "g.x", "g.y"};
  CHECK(dlx::config::flatten_hyperparameters(dlx::config::nest_hyperparameters(flat), flat_names) == flat);
}

TEST_CASE("config: DLX_HP_ values: strings as they are, anything else as JSON text", "[hparam_tree]") {
  CHECK(dlx::config::hyperparameter_variable_value("adam") == "adam");
  CHECK(dlx::config::hyperparameter_variable_value(0.5) == "0.5");
  CHECK(dlx::config::hyperparameter_variable_value(true) == "true");
  CHECK(dlx::config::hyperparameter_variable_value(nullptr) == "null");
  CHECK(dlx::config::hyperparameter_variable_value(ordered_json::parse("[1,2]")) == "[1,2]");
  CHECK(dlx::config::hyperparameter_variable_value(ordered_json::parse(R"({"a":"x"})")) == R"({"a":"x"})");
}
