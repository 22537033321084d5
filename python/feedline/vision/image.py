"""Image codecs: decoding (JPEG, PNG, WebP, recognized by content) and
encoding, for Python datasets and tests."""

from feedline._feedline import vision as _vision


def decode_image(data, source="", max_pixels=None):
    """Decodes encoded bytes (JPEG, PNG or WebP; an animated WebP gives its
    first frame) to a uint8 [H, W, 3] RGB array. Raises feedline.SampleError
    naming `source` if the data is not a supported, intact image, or has more
    than `max_pixels` pixels (default DEFAULT_MAX_PIXELS, Pillow's
    MAX_IMAGE_PIXELS)."""
    from feedline.io.arguments import _positive_int

    max_pixels = _positive_int("max_pixels", max_pixels, _vision.DEFAULT_MAX_PIXELS)
    return _vision.decode_image(data, source, max_pixels)


def encode_jpeg(image, quality=90):
    """Encodes a uint8 [H, W, 3] RGB array as JPEG bytes."""
    return _vision.encode_jpeg(image, quality)


def encode_png(image):
    """Encodes a uint8 [H, W] or [H, W, C] (C = 1..4) array as PNG bytes."""
    return _vision.encode_png(image)
