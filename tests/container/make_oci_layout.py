#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Builds an OCI image layout (and optionally an OCI archive of it) from directories, offline.

    make_oci_layout.py LAYOUT --layer DIR [--layer DIR]... [--archive FILE] [--gzip] [--files-only]
                      [--user UID:GID]

Each DIR becomes one layer, in order (the first at the bottom), as the tree it holds: a file
named .wh.NAME in a later layer is a whiteout of NAME, .wh..wh..opq an opaque directory, as the
OCI image spec has them. The config names linux/amd64. With --archive, the layout is also written
as one tar (what `podman save --format oci-archive` makes). The tests' stand-in for a registry.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile


def write_blob(layout: str, data: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = os.path.join(layout, "blobs", "sha256", digest.split(":")[1])
    with open(path, "wb") as blob:
        blob.write(data)
    return digest, len(data)


def layer_bytes(directory: str, compress: bool, files_only: bool) -> tuple[bytes, str]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if files_only:  # no entries for the directories: a layer that writes below a path as it finds it
            for parent, _, files in sorted(os.walk(directory)):
                for name in sorted(files):
                    path = os.path.join(parent, name)
                    tar.add(path, arcname=os.path.relpath(path, directory))
        else:
            for name in sorted(os.listdir(directory)):
                tar.add(os.path.join(directory, name), arcname=name, recursive=True)
    data = raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(data).hexdigest()
    return (gzip.compress(data, compresslevel=1) if compress else data), diff_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("layout")
    parser.add_argument("--layer", action="append", required=True)
    parser.add_argument("--archive")
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--files-only", action="store_true", help="layers without directory entries")
    parser.add_argument("--user", help="the config's User (an image's USER), e.g. 1000:1000")
    args = parser.parse_args()
    shutil.rmtree(args.layout, ignore_errors=True)
    os.makedirs(os.path.join(args.layout, "blobs", "sha256"))
    layers, diff_ids = [], []
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if args.gzip else "")
    for directory in args.layer:
        data, diff_id = layer_bytes(directory, args.gzip, args.files_only)
        digest, size = write_blob(args.layout, data)
        layers.append({"mediaType": media, "digest": digest, "size": size})
        diff_ids.append(diff_id)
    config = {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": diff_ids},
              "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"]}}
    if args.user:
        config["config"]["User"] = args.user
    config_digest, config_size = write_blob(args.layout, json.dumps(config).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                           "size": config_size},
                "layers": layers}
    manifest_digest, manifest_size = write_blob(args.layout, json.dumps(manifest).encode())
    index = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                "digest": manifest_digest, "size": manifest_size,
                                                "platform": {"architecture": "amd64", "os": "linux"}}]}
    with open(os.path.join(args.layout, "index.json"), "w") as out:
        json.dump(index, out)
    with open(os.path.join(args.layout, "oci-layout"), "w") as out:
        json.dump({"imageLayoutVersion": "1.0.0"}, out)
    if args.archive:
        with tarfile.open(args.archive, "w") as tar:
            for name in ("oci-layout", "index.json", "blobs"):
                tar.add(os.path.join(args.layout, name), arcname=name)
    print(manifest_digest)


if __name__ == "__main__":
    main()
