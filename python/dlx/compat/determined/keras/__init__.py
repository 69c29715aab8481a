# SPDX-License-Identifier: Apache-2.0
"""determined.keras (TFKerasTrial): not run by dlx."""
from .._unsupported import refuse

refuse("determined.keras (TFKerasTrial, TensorFlow)",
       "port the model to det.pytorch.PyTorchTrial, or train with TensorFlow in a script under the Core API "
       "(det.core.init())")
