"""Images: native datasets (feedline.vision.datasets), torchvision-style
transforms that run in C++ (feedline.vision.transforms), image codecs and a
writer of synthetic image folders (feedline.vision.synth)."""

from feedline.vision import datasets, synth, transforms
from feedline.vision.image import decode_image, encode_jpeg, encode_png

__all__ = ["datasets", "decode_image", "encode_jpeg", "encode_png", "synth", "transforms"]
