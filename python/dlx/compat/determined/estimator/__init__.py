# SPDX-License-Identifier: Apache-2.0
"""determined.estimator (EstimatorTrial): not run by dlx."""
from .._unsupported import refuse

refuse("determined.estimator (EstimatorTrial, TensorFlow)",
       "port the model to det.pytorch.PyTorchTrial, or train in a script under the Core API (det.core.init())")
