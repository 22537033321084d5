"""What the framework front ends (feedline.torch, feedline.paddle) share:
shaping feedline's batches (and the samples handed to a collate_fn) by the
sample's schema (_shaping.py). The public import paths stay feedline.torch
and feedline.paddle."""
