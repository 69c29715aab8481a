# SPDX-License-Identifier: Apache-2.0
"""Whether a libdlx_c loads in container images of other distributions (docs/containers.md, "The SDK
in any image"), read from its ELF dynamic section and symbol versions with pyelftools:

  1. the libraries it needs are glibc's and libgcc_s, which every glibc image has;
  2. every glibc symbol version it binds is at most --max-glibc (2.28: Debian 10, RHEL 8; Ubuntu
     20.04's is 2.31);
  3. no strong reference is left unversioned (one would need a library the image may not have);
     weak ones (Open MPI, libslurm: cmake/DlxPortableC.cmake) load as null where absent;
  4. it exports the C API (dlx_*) alone, so that nothing of its static libstdc++, HDF5 or yaml-cpp
     stands in for the image's own copies;
  5. with --root DIR (the older distribution's root): every versioned symbol it binds is defined,
     with that version, by the libraries of DIR themselves.

    portable_library_check.py LIBRARY [--max-glibc 2.28] [--root DIR]

Prints each problem and exits 1, or prints a summary and exits 0. scripts/portable-c.sh runs it on
the library it builds; tests/portable/library_check_test.py checks that it refuses the build's
own libdlx_c, which links Open MPI and glibc 2.34's symbols."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection

ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                  "libgcc_s.so.1", "ld-linux-x86-64.so.2"}
LIBRARY_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64")


@dataclass
class DynamicSymbols:
    needed: list[str] = field(default_factory=list)
    # (name, version or "", weak) of every undefined symbol
    imports: list[tuple[str, str, bool]] = field(default_factory=list)
    exports: list[str] = field(default_factory=list)
    # (name, version) of every defined symbol with a version definition
    definitions: set[tuple[str, str]] = field(default_factory=set)


def version_names(elf: ELFFile) -> dict[int, str]:
    """Version index -> name, from the needed (verneed) and defined (verdef) versions."""
    names: dict[int, str] = {}
    for section in elf.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            for _, auxiliaries in section.iter_versions():
                for auxiliary in auxiliaries:
                    names[auxiliary["vna_other"]] = auxiliary.name
        elif isinstance(section, GNUVerDefSection):
            for definition, auxiliaries in section.iter_versions():
                names[definition["vd_ndx"]] = next(iter(auxiliaries)).name
    return names


def read(path: str) -> DynamicSymbols:
    out = DynamicSymbols()
    with open(path, "rb") as stream:
        elf = ELFFile(stream)
        dynamic = elf.get_section_by_name(".dynamic")
        if dynamic is not None:
            out.needed = [tag.needed for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]
        symbols = elf.get_section_by_name(".dynsym")
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        names = version_names(elf)
        for index, symbol in enumerate(symbols.iter_symbols() if symbols else []):
            if not symbol.name:
                continue
            version = ""
            if versym is not None:
                ndx = versym.get_symbol(index)["ndx"]
                if isinstance(ndx, int):
                    version = names.get(ndx & 0x7FFF, "")
            binding = symbol["st_info"]["bind"]
            if symbol["st_shndx"] == "SHN_UNDEF":
                out.imports.append((symbol.name, version, binding == "STB_WEAK"))
            elif binding in ("STB_GLOBAL", "STB_WEAK"):
                out.exports.append(symbol.name)
                if version:
                    out.definitions.add((symbol.name, version))
    return out


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("_", 1)[1].split("."))


def root_library(root: str, name: str) -> str | None:
    """The file `name` resolves to inside `root`, its links followed within the root."""
    for directory in LIBRARY_DIRS:
        path = os.path.join(directory, name)
        for _ in range(16):
            full = os.path.join(root, path)
            if not os.path.islink(full):
                break
            target = os.readlink(full)
            path = target.lstrip("/") if target.startswith("/") else os.path.join(os.path.dirname(path), target)
        if os.path.isfile(os.path.join(root, path)):
            return os.path.join(root, path)
    return None


def problems(path: str, max_glibc: str, root: str | None) -> tuple[list[str], str]:
    library = read(path)
    found: list[str] = []
    for name in library.needed:
        if name not in ALLOWED_NEEDED:
            found.append(f"needs {name}, which an image need not have (only glibc's libraries and "
                         "libgcc_s may be needed: link it statically, or reference it weakly)")
    limit = version_tuple("GLIBC_" + max_glibc)
    newest = "GLIBC_2.2.5"
    too_new: list[str] = []
    unversioned: list[str] = []
    for name, version, weak in library.imports:
        if version.startswith("GLIBC_") and version != "GLIBC_PRIVATE":
            if version_tuple(version) > version_tuple(newest):
                newest = version
            if version_tuple(version) > limit:
                too_new.append(f"{name}@{version}")
        elif not version and not weak:
            unversioned.append(name)
    if too_new:
        found.append(f"binds {len(too_new)} glibc symbols newer than glibc {max_glibc}, e.g. "
                     f"{', '.join(sorted(too_new)[:6])}")
    if unversioned:
        found.append(f"needs {len(unversioned)} symbols unversioned and not weak, e.g. "
                     f"{', '.join(sorted(unversioned)[:6])}: an image without the library that "
                     "defines them cannot load this one")
    foreign = sorted(name for name in library.exports if not name.startswith("dlx_"))
    if foreign:
        found.append(f"exports {len(foreign)} symbols besides the C API's dlx_*, e.g. "
                     f"{', '.join(foreign[:5])}: they would stand in for the image's own")
    if root is not None:
        defined: set[tuple[str, str]] = set()
        for name in library.needed:
            file = root_library(root, name)
            if file is None:
                found.append(f"needs {name}, which {root} does not have")
                continue
            defined |= read(file).definitions
        for name, version, weak in library.imports:
            if version and not weak and (name, version) not in defined:
                found.append(f"binds {name}@{version}, which no library it needs in {root} defines")
    summary = (f"{path}: needs {', '.join(library.needed)}; newest glibc version bound {newest}; "
               f"{len(library.exports)} exported symbols (dlx_*); "
               f"{sum(1 for _, _, weak in library.imports if weak)} weak references")
    return found, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library")
    parser.add_argument("--max-glibc", default="2.28")
    parser.add_argument("--root", help="the older distribution's root, to check against its libraries")
    options = parser.parse_args()
    found, summary = problems(options.library, options.max_glibc, options.root)
    for problem in found:
        print(f"portable_library_check: {options.library}: {problem}", file=sys.stderr)
    if found:
        return 1
    print(f"portable_library_check: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
