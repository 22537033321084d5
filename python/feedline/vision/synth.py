"""Synthetic images and ImageNet-style folders, for examples, tests and
benchmarks without a real dataset. Everything is a function of the seed."""

import os

from feedline._feedline import vision as _vision


def write_image_folder(directory, images, classes=10, seed=0, broken=0):
    """Writes `images` JPEG files spread over `classes` folders under
    `directory` (directory/class_000/img_0000000.jpg, ...), plus `broken`
    undecodable files, and returns the broken files' paths. The images have a
    short side of 300-500 pixels, like photographs to a codec."""
    return _vision.write_image_folder(os.fspath(directory), int(images), int(classes), int(seed),
                                      int(broken))


def synthesize_image(width, height, seed=0):
    """A textured uint8 [height, width, 3] RGB image."""
    return _vision.synthesize_image(int(width), int(height), int(seed))
