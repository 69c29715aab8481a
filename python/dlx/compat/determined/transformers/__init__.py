# SPDX-License-Identifier: Apache-2.0
"""determined.transformers (DetCallback for Hugging Face's Trainer): not run by dlx."""
from .._unsupported import refuse

refuse("determined.transformers (DetCallback)",
       "report from a transformers TrainerCallback through the Core API (det.core.init(): train.report_*) "
       "or dlx.Trial")
