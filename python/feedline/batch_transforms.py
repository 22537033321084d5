"""Batch transforms with torch ops, for work moved off the loader.

A uint8 batch is a quarter of the bytes of the same batch in float32: the
loader writes less, the host-to-device copy moves less, and the conversion,
normalization and mixing then run wherever the batch tensor lives (on the GPU
after `.to(device)`, or on the CPU). Reached as feedline.torch.Normalize,
feedline.torch.MixUp, ...::

    loader = feedline.torch.DataLoader(ImageFolder(root, transform=Compose([
        RandomResizedCrop(224), RandomHorizontalFlip()])), ...)   # uint8 [B, H, W, 3]
    normalize = feedline.torch.Normalize(MEAN, STD, channels_last_input=True)
    mix = feedline.torch.RandomChoice([MixUp(0.2, 1000), CutMix(1.0, 1000)], seed=0)
    for step, (images, labels) in enumerate(loader):
        images = normalize(images.to(device, non_blocking=True))   # float32 [B, 3, H, W]
        images, targets = mix(images, labels.to(device), step=step)

Random draws (mixup's lambda, cutmix's box, the choice between them) are a
function of (seed, step) when `step` is given, so a resumed run mixes its
batches as the uninterrupted one did; without `step` they follow one
sequence from `seed`.
"""

import math

import numpy as np
import torch

__all__ = ["ConvertImageDtype", "CutMix", "MixUp", "MultiScaleResize", "Normalize", "RandomChoice"]


class ConvertImageDtype:
    """uint8 [B, C, H, W] (or [B, H, W, C] with channels_last_input) to a
    float dtype in [0, 1], as torchvision's ConvertImageDtype: x / 255."""

    def __init__(self, dtype=torch.float32, channels_last_input=False):
        if not dtype.is_floating_point:
            raise ValueError(f"ConvertImageDtype: dtype must be a float dtype, got {dtype}")
        self.dtype = dtype
        self.channels_last_input = bool(channels_last_input)

    def __call__(self, images):
        if images.dtype != torch.uint8:
            raise TypeError(f"ConvertImageDtype: expected a uint8 batch, got {images.dtype}")
        if images.dim() != 4:
            raise ValueError(f"ConvertImageDtype: expected a 4-d batch, got shape {tuple(images.shape)}")
        if self.channels_last_input:
            images = images.permute(0, 3, 1, 2)
        return images.to(self.dtype).div_(255.0).contiguous()


class Normalize:
    """(x / 255 - mean) / std per channel on a uint8 batch, giving
    float32 [B, C, H, W]: ToTensor + Normalize for the whole batch at once."""

    def __init__(self, mean, std, dtype=torch.float32, channels_last_input=False):
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        if len(self.mean) != len(self.std) or not self.mean:
            raise ValueError("Normalize: mean and std must have the same, non-zero length")
        if any(s <= 0 for s in self.std):
            raise ValueError(f"Normalize: std must be > 0, got {self.std}")
        self.convert = ConvertImageDtype(dtype, channels_last_input)

    def __call__(self, images):
        x = self.convert(images)
        if x.shape[1] != len(self.mean):
            raise ValueError(
                f"Normalize: the batch has {x.shape[1]} channels, mean and std have {len(self.mean)}"
            )
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
        return x.sub_(mean).div_(std)


class _Mixer:
    def __init__(self, alpha, num_classes, seed, name):
        if not alpha > 0:
            raise ValueError(f"{name}: alpha must be > 0, got {alpha}")
        if int(num_classes) < 1:
            raise ValueError(f"{name}: num_classes must be >= 1, got {num_classes}")
        self.alpha = float(alpha)
        self.num_classes = int(num_classes)
        self.seed = int(seed)
        self._sequence = np.random.default_rng(self.seed)

    def _rng(self, step):
        return self._sequence if step is None else np.random.default_rng([self.seed, int(step)])

    def _targets(self, labels, dtype):
        if labels.dim() == 1:
            return torch.nn.functional.one_hot(labels.long(), self.num_classes).to(dtype)
        return labels.to(dtype)  # already soft (e.g. after another mixer)

    @staticmethod
    def _check(images):
        if not images.is_floating_point() or images.dim() != 4:
            raise ValueError("expected a float [B, C, H, W] batch (normalize it first), got "
                             f"{images.dtype} {tuple(images.shape)}")


class MixUp(_Mixer):
    """torchvision's MixUp: lambda ~ Beta(alpha, alpha); every image is mixed
    with the next one of the batch (the batch rolled by one), and the one-hot
    targets alike. Returns (images, targets [B, num_classes])."""

    def __init__(self, alpha=1.0, num_classes=1000, seed=0):
        super().__init__(alpha, num_classes, seed, "MixUp")

    def __call__(self, images, labels, step=None):
        self._check(images)
        lam = float(self._rng(step).beta(self.alpha, self.alpha))
        targets = self._targets(labels, images.dtype)
        mixed = images.mul(lam).add_(images.roll(1, 0), alpha=1.0 - lam)
        return mixed, targets.mul(lam).add_(targets.roll(1, 0), alpha=1.0 - lam)


class CutMix(_Mixer):
    """torchvision's CutMix: lambda ~ Beta(alpha, alpha), a box of area
    (1 - lambda) of the image centred uniformly at random (clipped to the
    image) is pasted from the next image of the batch, and lambda is
    corrected to the pasted area. Returns (images, targets)."""

    def __init__(self, alpha=1.0, num_classes=1000, seed=0):
        super().__init__(alpha, num_classes, seed, "CutMix")

    def box(self, height, width, rng):
        lam = float(rng.beta(self.alpha, self.alpha))
        cx, cy = int(rng.integers(0, width)), int(rng.integers(0, height))
        r = 0.5 * math.sqrt(1.0 - lam)
        half_w, half_h = int(r * width), int(r * height)
        x1, y1 = max(cx - half_w, 0), max(cy - half_h, 0)
        x2, y2 = min(cx + half_w, width), min(cy + half_h, height)
        return x1, y1, x2, y2

    def __call__(self, images, labels, step=None):
        self._check(images)
        height, width = images.shape[-2:]
        x1, y1, x2, y2 = self.box(height, width, self._rng(step))
        out = images.clone()
        out[:, :, y1:y2, x1:x2] = images.roll(1, 0)[:, :, y1:y2, x1:x2]
        lam = 1.0 - (x2 - x1) * (y2 - y1) / float(width * height)
        targets = self._targets(labels, images.dtype)
        return out, targets.mul(lam).add_(targets.roll(1, 0), alpha=1.0 - lam)


class RandomChoice:
    """One of `mixers` per batch, uniformly (torchvision's recipe picks MixUp
    or CutMix this way)."""

    def __init__(self, mixers, seed=0):
        if not mixers:
            raise ValueError("RandomChoice: give at least one mixer")
        self.mixers = list(mixers)
        self.seed = int(seed)
        self._sequence = np.random.default_rng(self.seed)

    def __call__(self, images, labels, step=None):
        rng = self._sequence if step is None else np.random.default_rng([self.seed, int(step), 1])
        return self.mixers[int(rng.integers(0, len(self.mixers)))](images, labels, step=step)


class MultiScaleResize:
    """Multi-scale training for detection: each batch resized to a size
    drawn from `sizes`, one size per step, as YOLO's multi-scale training
    and PaddleDetection's BatchRandomResize do. The batch's longer side
    becomes the drawn size and the shorter one keeps the aspect ratio, both
    rounded up to a multiple of `size_divisibility` (the model's stride);
    the boxes given with it are scaled by the same factors per axis.

    The size is a function of (seed, step) when `step` is given, so every
    rank of a job (each with its own loader, the same seed and the same
    step) trains on the same size at the same step, and a resumed run
    draws the sizes the uninterrupted one drew; without `step` the sizes
    follow one sequence from `seed`. It runs on the batch tensor wherever
    it lives (the GPU after `.to(device)`), as the resize belongs to the
    training step, not to the loader::

        resize = feedline.torch.MultiScaleResize(range(320, 609, 32), seed=0)
        for step, batch in enumerate(loader):
            images = batch["image"].to(device)                 # [B, 3, H, W]
            images, boxes = resize(images, batch["boxes"].to(device), step=step)

    `boxes`: None, a tensor whose last dimension is 4 (x0, y0, x1, y1 in
    the batch's pixels: a padded [B, N, 4], detection_rows' [N, 4]), or a
    list or tuple of such tensors (torchvision's per-image targets' boxes);
    what is returned has the same form. Returns (images, boxes) with
    images [B, C, H', W'] in their dtype (floating point: integer images
    are refused, as torch's interpolate refuses them).
    """

    def __init__(self, sizes, seed=0, size_divisibility=32, mode="bilinear"):
        try:
            self.sizes = [int(s) for s in sizes]
        except (TypeError, ValueError):
            raise ValueError(f"MultiScaleResize: sizes must be whole numbers, got {sizes!r}") from None
        if not self.sizes or any(s < 1 for s in self.sizes):
            raise ValueError(f"MultiScaleResize: sizes must be a non-empty list of sizes >= 1, got {sizes!r}")
        self.size_divisibility = int(size_divisibility)
        if self.size_divisibility < 1:
            raise ValueError(f"MultiScaleResize: size_divisibility must be >= 1, got {size_divisibility!r}")
        if mode not in ("nearest", "bilinear", "bicubic", "area"):
            raise ValueError(f"MultiScaleResize: mode must be nearest, bilinear, bicubic or area, got {mode!r}")
        self.mode = mode
        self.seed = int(seed)
        self._sequence = np.random.default_rng(self.seed)

    def size(self, step=None):
        """The size drawn for `step` (from the sequence without it)."""
        rng = self._sequence if step is None else np.random.default_rng([self.seed, int(step), 2])
        return self.sizes[int(rng.integers(0, len(self.sizes)))]

    def output_shape(self, height, width, size):
        """(H', W') for a batch of height x width resized to `size`."""
        scale = size / max(height, width)
        d = self.size_divisibility
        return (max(d, math.ceil(height * scale / d) * d), max(d, math.ceil(width * scale / d) * d))

    def __call__(self, images, boxes=None, step=None):
        if not isinstance(images, torch.Tensor) or images.dim() != 4:
            shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"MultiScaleResize: expected images [B, C, H, W], got {shape}")
        if not images.is_floating_point():
            raise TypeError(f"MultiScaleResize: expected floating-point images, got {images.dtype} "
                            "(convert first, e.g. feedline.torch.ConvertImageDtype)")
        height, width = images.shape[-2:]
        size = self.size(step)
        new_h, new_w = self.output_shape(height, width, size)
        kwargs = {} if self.mode in ("nearest", "area") else {"align_corners": False}
        resized = torch.nn.functional.interpolate(images, size=(new_h, new_w), mode=self.mode, **kwargs)
        factors = (new_w / width, new_h / height)
        return resized, self._scale_boxes(boxes, factors)

    @staticmethod
    def _scale_boxes(boxes, factors):
        if boxes is None:
            return None
        if isinstance(boxes, (list, tuple)):
            return type(boxes)(MultiScaleResize._scale_boxes(b, factors) for b in boxes)
        if not isinstance(boxes, torch.Tensor) or boxes.dim() < 1 or boxes.shape[-1] != 4:
            shape = tuple(boxes.shape) if isinstance(boxes, torch.Tensor) else type(boxes).__name__
            raise ValueError(f"MultiScaleResize: boxes must have a last dimension of 4 (x0, y0, x1, y1), got {shape}")
        sx, sy = factors
        scale = torch.tensor([sx, sy, sx, sy], dtype=boxes.dtype if boxes.is_floating_point() else torch.float32,
                             device=boxes.device)
        return boxes * scale

