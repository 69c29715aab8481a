# SPDX-License-Identifier: Apache-2.0
"""Determined's launchers (`python3 -m determined.launch.torch_distributed ...`): dlx-launch has
started every rank already, with torchrun's variables, so a launcher runs its command as it is."""
