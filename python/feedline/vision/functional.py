"""torchvision.transforms.functional's color and AutoAugment operations on
one uint8 RGB image ([H, W, 3] numpy array), run by the same C++ code as the
native transforms (ColorJitter, TrivialAugmentWide, RandAugment,
AutoAugment). Each returns a new array.

Example::

    from feedline.vision import functional as F
    brighter = F.adjust_brightness(image, 1.3)
    sheared = F.apply_augment_op(image, "ShearX", 0.3)   # as torchvision's _apply_op
"""

from feedline._feedline import vision as _vision

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "adjust_sharpness",
    "apply_augment_op",
]


def adjust_brightness(image, brightness_factor):
    """Blend with black: brightness_factor * x, clamped, truncated."""
    return _vision.adjust(image, "brightness", float(brightness_factor))


def adjust_contrast(image, contrast_factor):
    """Blend with the mean of the grayscale image."""
    return _vision.adjust(image, "contrast", float(contrast_factor))


def adjust_saturation(image, saturation_factor):
    """Blend with the grayscale image."""
    return _vision.adjust(image, "saturation", float(saturation_factor))


def adjust_hue(image, hue_factor):
    """Shift the hue by hue_factor turns (in [-0.5, 0.5]) in HSV."""
    return _vision.adjust(image, "hue", float(hue_factor))


def adjust_sharpness(image, sharpness_factor):
    """Blend with a 3x3 blur of the image (its border kept)."""
    return _vision.adjust(image, "sharpness", float(sharpness_factor))


def apply_augment_op(image, op, magnitude, interpolation="nearest", fill=None):
    """torchvision's autoaugment._apply_op: op is one of Identity, ShearX,
    ShearY, TranslateX, TranslateY, Rotate, Brightness, Color, Contrast,
    Sharpness, Posterize, Solarize, AutoContrast, Equalize, Invert."""
    fill = [0.0, 0.0, 0.0] if fill is None else [float(f) for f in fill]
    if len(fill) == 1:
        fill *= 3
    mode = str(getattr(interpolation, "value", interpolation)).lower()
    return _vision.augment_op(image, str(op), float(magnitude), mode, fill)
