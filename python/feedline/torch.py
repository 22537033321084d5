"""feedline for torch users: torch.utils.data.DataLoader's signature, torch
tensors out. The one changed line::

    from feedline.torch import DataLoader   # was: from torch.utils.data import DataLoader

An adapter over feedline.DataLoader that behaves as torch's loader does:
torch's argument checks and messages, torch's batch types (what
default_collate gives, or exactly what a collate_fn returned), torch's
worker seeding and get_worker_info(), the dataset's own exception types.
torch's own DataLoader test suite runs against it in make test
(tests/peers/run_torch_suite.py). See docs/python.md, "Coming from torch".

The public import path; the front end itself is feedline/frontends/torch/.
"""

from feedline.batch_transforms import (ConvertImageDtype, CutMix, MixUp, MultiScaleResize, Normalize,
                                       RandomChoice)
from feedline.frontends.torch.loader import DataLoader

__all__ = ["ConvertImageDtype", "CutMix", "DataLoader", "MixUp", "MultiScaleResize", "Normalize",
           "RandomChoice"]
