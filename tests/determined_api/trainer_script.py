# SPDX-License-Identifier: Apache-2.0
"""Determined's Trainer API (0.27+) as its MNIST tutorial's train.py uses it, over model_def.py's
RegressionTrial: `python3 trainer_script.py --epochs N [--validation-batches B]`
(pytorch_trial_test.py). The tutorial validates every 100 batches; so does this by default.
`--max-batches N` asks Trainer.fit for a length in batches (which dlx's loop refuses without a
searcher length, with a message)."""
import argparse
import logging

import determined as det
from determined import pytorch

from model_def import RegressionTrial

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--validation-batches", type=int, default=100)
    parser.add_argument("--max-batches", type=int)
    args = parser.parse_args()
    info = det.get_cluster_info()
    with pytorch.init() as train_context:
        trial = RegressionTrial(train_context)
        trainer = pytorch.Trainer(trial, train_context)
        length = pytorch.Batch(args.max_batches) if args.max_batches else pytorch.Epoch(args.epochs)
        trainer.fit(max_length=length, latest_checkpoint=info.latest_checkpoint,
                    validation_period=pytorch.Batch(args.validation_batches))
