# SPDX-License-Identifier: Apache-2.0
"""determined.experimental (the client of Determined's master, its REST API): dlx has no master."""
from .._unsupported import refuse

refuse("determined.experimental (the client of Determined's master)",
       "dlx has no master: read results with `dlx status`, `dlx report`, h5py on trial.h5, or load a checkpoint "
       "with dlx.Trial().open_checkpoint(path)")
