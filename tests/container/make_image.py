#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Builds a container image's root file system, offline, from Debian packages installed here.

    make_image.py ROOT [--library FILE]... PACKAGE...

ROOT receives the files of PACKAGE and of every package they depend on (Depends and Pre-Depends,
installed alternatives), as the packages install them, hard-linked where ROOT is on the same file
system (so an image of PyTorch costs no copy) and copied otherwise; /bin, /lib, /lib64 and /sbin
are links into /usr, as in Debian's merged /usr. `--library FILE` adds the packages of the
libraries FILE links (ldd, dpkg -S), and those libraries themselves where no package owns them
(NCCL from NVIDIA's toolkit): libdlx_c's, for `import dlx` in the image. No registry, no
network: the tests' images are what Debian's packages make them.
"""
import argparse
import os
import shutil
import subprocess
import sys


def installed(package: str) -> bool:
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return status.returncode == 0 and status.stdout.endswith(" installed")


def closure(packages: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(packages)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        if not installed(package):
            sys.exit(f"make_image: the package {package} is not installed")
        seen.add(package)
        fields = subprocess.run(["dpkg-query", "-W", "-f=${Depends},${Pre-Depends}", package],
                                capture_output=True, text=True, check=True).stdout
        for dependency in filter(None, (item.strip() for item in fields.split(","))):
            for alternative in dependency.split("|"):
                name = alternative.strip().split()[0].split(":")[0]
                if installed(name):
                    todo.append(name)
                    break
    return seen


def library_packages(library: str, outside: list[str]) -> set[str]:
    """The packages of the libraries `library` links; those no package owns (NCCL and the CUDA
    runtime from NVIDIA's toolkit, as an NGC image has them) go into `outside`."""
    packages = set()
    for line in subprocess.run(["ldd", library], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split("=>")
        if len(parts) != 2 or not parts[1].strip().startswith("/"):
            continue
        path = os.path.realpath(parts[1].split()[0])
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if owner.returncode != 0:  # merged /usr: dpkg knows the /lib name
            owner = subprocess.run(["dpkg", "-S", path.removeprefix("/usr")], capture_output=True, text=True)
        if owner.returncode == 0:
            packages.add(owner.stdout.split(":")[0])
        else:
            outside.extend({parts[1].split()[0], path})
    return packages


def place(source: str, root: str) -> None:
    # Through the host's merged-/usr links: /bin/sh is /usr/bin/sh.
    real_parent = os.path.realpath(os.path.dirname(source))
    target = os.path.join(root, real_parent.lstrip("/"), os.path.basename(source))
    if os.path.islink(source):
        if not os.path.lexists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(os.readlink(source), target)
    elif os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif os.path.isfile(source) and not os.path.lexists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        if source.endswith(".py"):
            # The compiled modules the package's postinst made (dpkg does not list them): without
            # them Python compiles every module at each import in a read-only image.
            cache = os.path.join(os.path.dirname(source), "__pycache__")
            stem = os.path.basename(source)[:-3] + "."
            if os.path.isdir(cache):
                for name in os.listdir(cache):
                    if name.startswith(stem) and name.endswith(".pyc") and name.count(".") == stem.count(".") + 1:
                        place(os.path.join(cache, name), root)


def place_with_links(source: str, root: str) -> None:
    """`source` and the links on its way as the host has them (/usr/local/cuda -> cuda-13.0)."""
    parts = source.strip("/").split("/")
    for depth in range(1, len(parts)):
        prefix = "/" + "/".join(parts[:depth])
        if os.path.islink(prefix):
            target = os.path.join(root, prefix.lstrip("/"))
            if not os.path.lexists(target):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(os.readlink(prefix), target)
            place_with_links(os.path.join(os.path.realpath(prefix), *parts[depth:]), root)
            return
    place(source, root)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--library", action="append", default=[])
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args()
    wanted = list(args.packages)
    outside: list[str] = []
    for library in args.library:
        wanted.extend(library_packages(library, outside))
    packages = closure(wanted)
    os.makedirs(args.root, exist_ok=True)
    for top in ("usr/bin", "usr/lib", "usr/lib64", "usr/sbin", "etc", "tmp", "proc", "sys", "dev", "root", "home", "var/tmp", "run"):
        os.makedirs(os.path.join(args.root, top), exist_ok=True)
    for link in ("bin", "lib", "lib64", "sbin"):
        if not os.path.lexists(os.path.join(args.root, link)):
            os.symlink(f"usr/{link}", os.path.join(args.root, link))
    for package in sorted(packages):
        files = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
        for path in files.splitlines():
            if path.startswith("/") and path not in ("/.", "/bin", "/lib", "/lib64", "/sbin") and os.path.lexists(path):
                place(path, args.root)
    for path in outside:
        place_with_links(path, args.root)
    # What maintainer scripts make rather than ship: the alternatives' links (libblas.so.3 ->
    # /etc/alternatives/...) and the dynamic linker's cache.
    for name in ("alternatives", "ld.so.conf", "ld.so.conf.d", "ld.so.cache"):
        source = os.path.join("/etc", name)
        if os.path.isdir(source) and not os.path.islink(source):
            for directory, _, files in os.walk(source):
                place(directory, args.root)
                for file in files:
                    place(os.path.join(directory, file), args.root)
        elif os.path.lexists(source):
            place(source, args.root)
    # The links into /etc/alternatives that update-alternatives made (libblas.so.3, python3's
    # tools), where what they finally name is in the image.
    for directory in ("/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if entry.is_symlink() and os.readlink(entry.path).startswith("/etc/alternatives/"):
                final = os.path.realpath(entry.path)
                if os.path.lexists(os.path.join(args.root, final.lstrip("/"))):
                    place(entry.path, args.root)
    with open(os.path.join(args.root, "etc", "passwd"), "w") as passwd:
        passwd.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    with open(os.path.join(args.root, "etc", "group"), "w") as group:
        group.write("root:x:0:\nnogroup:x:65534:\n")
    for path in ("etc/hosts", "etc/resolv.conf"):
        open(os.path.join(args.root, path), "a").close()
    os.chmod(os.path.join(args.root, "tmp"), 0o1777)
    print(f"make_image: {len(packages)} packages into {args.root}")


if __name__ == "__main__":
    main()
