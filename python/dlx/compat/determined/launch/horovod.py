# SPDX-License-Identifier: Apache-2.0
"""python3 -m determined.launch.horovod: not run by dlx."""
from .._unsupported import refuse

refuse("python3 -m determined.launch.horovod (Horovod)",
       "use torch.distributed (python3 -m determined.launch.torch_distributed, or the script itself): dlx-launch "
       "starts every rank with torchrun's variables")
