"""feedline for Paddle users: paddle.io.DataLoader's signature, paddle
Tensors out in the structures paddle.io gives. The one changed line::

    from feedline.paddle import DataLoader   # was: from paddle.io import DataLoader

An adapter over feedline.DataLoader with no loading logic of its own: it
checks paddle.io's arguments with Paddle's messages, sets up the worker
processes as Paddle's own are set up (dynamic graph on the CPU, seeds,
paddle.io.get_worker_info()), and turns each batch's numpy arrays into
paddle Tensors through DLPack, sharing their memory (in a static-graph
program, into the DenseTensors an Executor is fed). Without paddle, batches
stay numpy arrays. docs/paddle.md maps every argument and lists what differs
on purpose; python/tests/paddle_contract runs the same assertions against
paddle.io.DataLoader and this one.

The public import path; the front end itself is feedline/frontends/paddle/.
"""

from feedline.frontends.paddle.loader import DataLoader

__all__ = ["DataLoader"]
