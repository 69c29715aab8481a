#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Spack recipe (packaging/spack/packages/dlx/package.py) against the CMake build it drives.

Loaded with spack_stand_in.py as `spack.package` (Spack is not installable here). Checks the class,
its variants, that every dependency the CMake build looks for (find_package, pkg_check_modules,
find_path, find_library, find_file in the CMake files of what the recipe builds) has its Spack
line, and the cmake_args of each variant combination, whose -D names must be cache entries of
the project. Usage: recipe_test.py SOURCE_DIR
"""
import importlib.util
import itertools
import os
import re
import sys
import types
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                             os.path.join(os.path.dirname(__file__), "..", ".."))
RECIPE = os.path.join(SOURCE_DIR, "packaging", "spack", "packages", "dlx", "package.py")
# Folders the recipe does not build (DLX_BUILD_TESTS, _BENCH, _EXAMPLES off), and build trees.
NOT_BUILT = {"tests", "bench", "examples", "packaging", ".git"}

# What each thing the CMake build looks for is in Spack: a package name, or None with the reason
# it needs no Spack line. A find_* call missing here fails test_every_cmake_dependency_has_a_line.
SPACK_NAME = {
    ("find_package", "PkgConfig"): "pkgconfig",
    ("find_package", "MPI"): "mpi",
    ("find_package", "HDF5"): "hdf5",
    ("find_package", "yaml-cpp"): "yaml-cpp",
    ("find_package", "Boost"): "boost",
    ("find_package", "fmt"): "fmt",
    ("find_package", "nlohmann_json"): "nlohmann-json",
    ("find_package", "Protobuf"): "protobuf",
    ("find_package", "CUDAToolkit"): "cuda",
    ("find_package", "Threads"): None,          # the C library's threads
    ("find_package", "Catch2"): None,           # only with DLX_BUILD_TESTS, off in the recipe
    ("pkg_check_modules", "libisal"): "isa-l",
    ("find_package", "OpenSSL"): "openssl",
    ("pkg_check_modules", "libarchive"): "libarchive",
    ("pkg_check_modules", "slurm"): "slurm",    # Slurm's plugin directory, when it ships slurm.pc
    ("find_path", "slurm/spank.h"): "slurm",
    ("find_library", "slurm"): "slurm",
    ("find_path", "nccl.h"): "nccl",
    ("find_library", "nccl"): "nccl",
    ("find_file", "chart.min.js"): None,        # the chart_js variant names it (DLX_CHART_JS)
    ("find_program", "ccache"): None,           # optional compiler cache
    # The portable libdlx_c (DLX_PORTABLE_C, scripts/portable-c.sh; not the recipe's build): the
    # headers of the same dependencies, and binutils' objcopy beside the compiler.
    ("find_path", "slurm/slurm.h"): "slurm",
    ("find_path", "nlohmann/json.hpp"): "nlohmann-json",
    ("find_path", "boost/version.hpp"): "boost",
    ("find_program", "objcopy"): None,
}
ONLY_WITH = {"cuda": "+cuda", "nccl": "+cuda", "py-h5py": "+python"}

FIND_CALL = re.compile(r"\b(find_package|pkg_check_modules|find_path|find_library|find_file|find_program)"
                       r"\s*\(([^)]*)\)", re.IGNORECASE)
PKG_KEYWORDS = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                "NO_CMAKE_ENVIRONMENT_PATH"}


def cmake_files(root):
    for directory, folders, files in os.walk(root):
        # Build trees and hidden folders (.git, scripts/gpu-bundle.sh's .gpu-bundle) are no part
        # of the build's own CMake code.
        folders[:] = sorted(f for f in folders
                            if not (directory == root and (f in NOT_BUILT or f.startswith(("build", ".")))))
        for name in sorted(files):
            if name == "CMakeLists.txt" or name.endswith(".cmake"):
                yield os.path.join(directory, name)


def find_calls(text):
    """(command, what it looks for) for each find_* call in CMake text, comments removed."""
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    for match in FIND_CALL.finditer(text):
        command, words = match.group(1).lower(), match.group(2).split()
        if command == "find_package":
            yield command, words[0]
        elif command == "pkg_check_modules":
            yield command, next(w for w in words[1:] if w not in PKG_KEYWORDS).split(">")[0]
        else:  # find_path(VAR NAME ...), find_library, find_file, find_program
            yield command, words[2] if words[1] == "NAMES" else words[1]


def missing_lines(calls, recipe_dependencies):
    """What the CMake build looks for without a Spack line, as messages."""
    problems = []
    for where, key in calls:
        if key not in SPACK_NAME:
            problems.append(f"{where}: {key[0]}({key[1]}) is not known to tests/spack/recipe_test.py: "
                            f"add the dependency's depends_on() to package.py and the pair to SPACK_NAME")
        elif SPACK_NAME[key] and SPACK_NAME[key] not in recipe_dependencies:
            problems.append(f"{where}: {key[0]}({key[1]}) needs depends_on(\"{SPACK_NAME[key]}\") in package.py")
    return problems


def load_recipe():
    stand_in = importlib.util.spec_from_file_location(
        "spack.package", os.path.join(os.path.dirname(os.path.abspath(__file__)), "spack_stand_in.py"))
    package_module = importlib.util.module_from_spec(stand_in)
    stand_in.loader.exec_module(package_module)
    sys.modules["spack"] = types.ModuleType("spack")
    sys.modules["spack.package"] = package_module
    recipe_spec = importlib.util.spec_from_file_location("dlx_recipe", RECIPE)
    recipe = importlib.util.module_from_spec(recipe_spec)
    recipe_spec.loader.exec_module(recipe)
    return package_module, recipe


STAND_IN, RECIPE_MODULE = load_recipe()
Dlx = RECIPE_MODULE.Dlx


def directives(kind):
    return [d for d in Dlx.directives if d.kind == kind]


def dependency_name(spec_text):
    return re.match(r"[a-z0-9-]+", spec_text).group(0)


def cache_entries(root):
    """Names the project's CMake files declare as options or cache entries."""
    names = set()
    pattern = re.compile(r"\b(?:option|cmake_dependent_option)\s*\(\s*(\w+)|\bset\s*\(\s*(\w+)[^)]*\bCACHE\b"
                         r"|\bfind_(?:file|path|library|program)\s*\(\s*(\w+)")
    for path in cmake_files(root):
        with open(path) as f:
            for match in pattern.finditer(f.read()):
                names.add(next(group for group in match.groups() if group))
    return names


class RecipeTest(unittest.TestCase):
    def test_class_is_a_cmake_package_named_dlx(self):
        self.assertTrue(issubclass(Dlx, STAND_IN.CMakePackage))
        self.assertEqual([d.args[0] for d in directives("version")], ["0.1.0"])
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
            project_version = re.search(r"project\(dlx VERSION ([0-9.]+)", f.read()).group(1)
        self.assertIn(project_version, [d.args[0] for d in directives("version")],
                      "package.py's version() must follow project(dlx VERSION ...)")

    def test_licence_is_the_trees(self):
        self.assertEqual([d.args for d in directives("license")], [("Apache-2.0",)])
        with open(os.path.join(SOURCE_DIR, "LICENSE")) as f:
            self.assertIn("Apache License\n                           Version 2.0, January 2004", f.read(),
                          "package.py's license() must name the licence of LICENSE")

    def test_variants(self):
        variants = {d.args[0]: d.kwargs for d in directives("variant")}
        self.assertEqual(set(variants), {"cuda", "python", "chart_js"})
        self.assertIs(variants["cuda"]["default"], False)
        self.assertIs(variants["python"]["default"], True)
        for name, options in variants.items():
            self.assertTrue(options.get("description"), f"variant {name} has no description")

    def test_every_cmake_dependency_has_a_line(self):
        dependencies = {dependency_name(d.args[0]) for d in directives("depends_on")}
        dependencies |= {dependency_name(d.args[0]) for d in directives("extends")}
        calls = []
        for path in cmake_files(SOURCE_DIR):
            with open(path) as f:
                for key in find_calls(f.read()):
                    calls.append((os.path.relpath(path, SOURCE_DIR), key))
        self.assertGreater(len(calls), 10, "found too few find_* calls: is SOURCE_DIR the source tree?")
        self.assertEqual(missing_lines(calls, dependencies), [])

    def test_a_new_cmake_dependency_without_a_line_fails(self):
        calls = [("x/CMakeLists.txt", key) for key in find_calls(
            "find_package(MPI REQUIRED)  # find_package(Ignored)\nfind_package(Zstd REQUIRED)\n"
            "pkg_check_modules(ISAL QUIET IMPORTED_TARGET libisal)\nfind_path(SLURM_INCLUDE_DIR slurm/spank.h)")]
        self.assertEqual([key for _, key in calls], [("find_package", "MPI"), ("find_package", "Zstd"),
                                                     ("pkg_check_modules", "libisal"),
                                                     ("find_path", "slurm/spank.h")])
        problems = missing_lines(calls, {"mpi", "slurm"})
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("find_package(Zstd) is not known", problems[0])
        self.assertIn('needs depends_on("isa-l")', problems[1])

    def test_conditional_dependencies(self):
        for d in directives("depends_on"):
            name = dependency_name(d.args[0])
            self.assertEqual(d.kwargs.get("when"), ONLY_WITH.get(name), f"depends_on({d.args[0]!r})")
        self.assertEqual([(d.args[0], d.kwargs.get("when")) for d in directives("extends")],
                         [("python", "+python")])
        self.assertIn("hdf5@1.10:~mpi", [d.args[0] for d in directives("depends_on")])
        self.assertIn("boost@1.74:+program_options", [d.args[0] for d in directives("depends_on")])

    def test_cmake_args_for_each_variant_combination(self):
        known = cache_entries(SOURCE_DIR)
        for cuda, python in itertools.product([False, True], repeat=2):
            with self.subTest(cuda=cuda, python=python):
                spec = STAND_IN.Spec(
                    {"cuda": cuda, "python": python, "chart_js": "/opt/chart.js/chart.min.js"},
                    {"python": types.SimpleNamespace(package=types.SimpleNamespace(
                        purelib="lib/python3.11/site-packages")),
                     "cuda": types.SimpleNamespace(prefix="/opt/cuda-13.0")})
                args = Dlx(spec).cmake_args()
                expected = ["-DDLX_BUILD_TESTS:BOOL=OFF", "-DDLX_BUILD_BENCH:BOOL=OFF",
                            "-DDLX_BUILD_EXAMPLES:BOOL=OFF", "-DDLX_WERROR:BOOL=OFF",
                            "-DDLX_HARDENING:BOOL=ON",
                            f"-DDLX_WITH_CUDA:STRING={'ON' if cuda else 'OFF'}",
                            "-DDLX_CHART_JS:STRING=/opt/chart.js/chart.min.js"]
                if cuda:
                    expected.append("-DCUDAToolkit_ROOT:STRING=/opt/cuda-13.0")
                if python:
                    expected.append("-DDLX_PYTHON_INSTALL_DIR:STRING=lib/python3.11/site-packages")
                self.assertEqual(args, expected)
                for arg in args:
                    name = re.match(r"-D(\w+):", arg).group(1)
                    if name != "CUDAToolkit_ROOT":  # CMake's FindCUDAToolkit reads it
                        self.assertIn(name, known, f"{arg}: no such option or cache entry in the CMake files")


if __name__ == "__main__":
    unittest.main(verbosity=2)
