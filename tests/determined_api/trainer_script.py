# SPDX-License-Identifier: Apache-2.0
"""Determined's Trainer API (0.27+) as its MNIST tutorial's train.py uses it, over model_def.py's
RegressionTrial: `python3 trainer_script.py --epochs N` (pytorch_trial_test.py)."""
import argparse
import logging

import determined as det
from determined import pytorch

from model_def import RegressionTrial

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    info = det.get_cluster_info()
    with pytorch.init() as train_context:
        trial = RegressionTrial(train_context)
        trainer = pytorch.Trainer(trial, train_context)
        trainer.fit(max_length=pytorch.Epoch(args.epochs), latest_checkpoint=info.latest_checkpoint,
                    validation_period=pytorch.Batch(100))
