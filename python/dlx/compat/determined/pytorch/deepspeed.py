# SPDX-License-Identifier: Apache-2.0
"""determined.pytorch.deepspeed (DeepSpeedTrial): not run by dlx."""
from .._unsupported import refuse

refuse("determined.pytorch.deepspeed (DeepSpeedTrial)",
       "use det.pytorch.PyTorchTrial (DistributedDataParallel across the trial's ranks), or run DeepSpeed in a "
       "script under the Core API (det.core.init())")
