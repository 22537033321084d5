"""The framework front ends, feedline.torch and feedline.paddle (the public
import paths, which re-export them), and what they share:

  frontend.py   the Frontend protocol: the one policy object a front end
                hands feedline.io.DataLoader (batch types, seeding, batches
                per worker, which datasets are streams).
  _shaping.py   batches shaped by the sample's schema, as a framework's
                collate shapes them; each front end supplies its Shaping.
  samples.py    the samples a collate_fn receives, as the dataset returned
                them.
  iterator.py   the iterator that converts each batch.
  lowering.py   the walk that loads a framework's image dataset natively.

torch/ and paddle/ each hold the loader, its batches, errors, worker
seeding and the recognizer for native lowering (paddle/ also the static
graph). Nothing here imports a framework until its front end is used."""
