# SPDX-License-Identifier: Apache-2.0
"""Compatibility layers for training code written against other platforms' APIs. Each is a
top-level package in this directory (determined/), found by `import determined` because
dlx-launch puts this directory on the trainer's PYTHONPATH (docs/determined.md)."""
