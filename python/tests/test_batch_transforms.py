"""Batch transforms with torch ops (feedline.torch.Normalize, MixUp, CutMix):
the same numbers as the per-sample pipeline, the torchvision recipes'
formulas, draws that depend on (seed, step) only."""

import numpy as np
import pytest
import torch

import feedline
import feedline.torch as ft
from feedline.vision import datasets, synth
from feedline.vision import transforms as T

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("photos")
    synth.write_image_folder(str(root), images=24, classes=3, seed=2)
    return str(root)


def first_batch(folder, transforms):
    data = datasets.ImageFolder(folder, transform=T.Compose(transforms))
    loader = ft.DataLoader(data, batch_size=8, shuffle=True, seed=9, num_workers=2)
    images, labels = next(iter(loader))
    return images.clone(), labels.clone()


def test_normalize_on_a_uint8_batch_equals_the_per_sample_pipeline(folder):
    crop = [T.RandomResizedCrop(40), T.RandomHorizontalFlip()]
    raw, labels = first_batch(folder, crop)
    assert raw.dtype == torch.uint8 and raw.shape == (8, 40, 40, 3)
    native, native_labels = first_batch(folder, crop + [T.ToTensor(), T.Normalize(MEAN, STD)])
    on_batch = ft.Normalize(MEAN, STD, channels_last_input=True)(raw)
    assert on_batch.shape == native.shape == (8, 3, 40, 40)
    assert torch.equal(labels, native_labels)
    assert torch.allclose(on_batch, native, atol=1e-5, rtol=0)


def test_convert_image_dtype_is_division_by_255():
    x = torch.arange(256, dtype=torch.uint8).view(1, 1, 16, 16)
    y = ft.ConvertImageDtype(torch.float32)(x)
    assert torch.equal(y, torch.arange(256, dtype=torch.float32).view(1, 1, 16, 16) / 255)
    with pytest.raises(TypeError, match="expected a uint8 batch"):
        ft.ConvertImageDtype()(y)
    with pytest.raises(ValueError, match="must be a float dtype"):
        ft.ConvertImageDtype(torch.int32)


def batch():
    g = torch.Generator().manual_seed(0)
    return torch.rand(6, 3, 20, 30, generator=g), torch.tensor([0, 1, 2, 3, 4, 0])


def test_mixup_mixes_each_image_with_the_next_by_lambda():
    images, labels = batch()
    mixed, targets = ft.MixUp(alpha=0.4, num_classes=5, seed=3)(images, labels, step=7)
    lam = float(np.random.default_rng([3, 7]).beta(0.4, 0.4))
    assert torch.allclose(mixed, lam * images + (1 - lam) * images.roll(1, 0), atol=1e-6)
    one_hot = torch.nn.functional.one_hot(labels, 5).float()
    assert torch.allclose(targets, lam * one_hot + (1 - lam) * one_hot.roll(1, 0), atol=1e-6)
    assert torch.allclose(targets.sum(1), torch.ones(6))


def test_cutmix_pastes_a_box_and_weights_targets_by_its_area():
    images, labels = batch()
    cutmix = ft.CutMix(alpha=1.0, num_classes=5, seed=1)
    out, targets = cutmix(images, labels, step=4)
    x1, y1, x2, y2 = cutmix.box(20, 30, np.random.default_rng([1, 4]))
    inside = torch.zeros(20, 30, dtype=torch.bool)
    inside[y1:y2, x1:x2] = True
    assert inside.any() and not inside.all()
    assert torch.equal(out[:, :, inside], images.roll(1, 0)[:, :, inside])
    assert torch.equal(out[:, :, ~inside], images[:, :, ~inside])
    lam = 1 - inside.float().mean().item()
    one_hot = torch.nn.functional.one_hot(labels, 5).float()
    assert torch.allclose(targets, lam * one_hot + (1 - lam) * one_hot.roll(1, 0), atol=1e-6)


def test_draws_depend_on_seed_and_step_only():
    images, labels = batch()
    choice = lambda: ft.RandomChoice([ft.MixUp(0.2, 5, seed=1), ft.CutMix(1.0, 5, seed=1)], seed=1)
    a = [choice()(images, labels, step=s)[0] for s in range(6)]
    b = [choice()(images, labels, step=s)[0] for s in reversed(range(6))][::-1]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(a[0], x) for x in a[1:])


def test_invalid_parameters_are_refused():
    with pytest.raises(ValueError, match="alpha must be > 0"):
        ft.MixUp(alpha=0)
    with pytest.raises(ValueError, match="num_classes must be >= 1"):
        ft.CutMix(num_classes=0)
    with pytest.raises(ValueError, match="std must be > 0"):
        ft.Normalize([0.5], [0])
    with pytest.raises(ValueError, match="normalize it first"):
        ft.MixUp(1.0, 3)(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([0, 1]))


SIZES = list(range(320, 609, 32))


def test_multi_scale_draws_one_size_per_step_the_same_on_every_rank():
    # Two ranks: each its own transform, the same seed, steps met in any order.
    rank0 = ft.MultiScaleResize(SIZES, seed=4)
    rank1 = ft.MultiScaleResize(SIZES, seed=4)
    drawn = [rank0.size(step) for step in range(60)]
    assert drawn == [rank1.size(step) for step in reversed(range(60))][::-1]
    assert set(drawn) <= set(SIZES) and len(set(drawn)) >= 5
    assert drawn != [ft.MultiScaleResize(SIZES, seed=5).size(step) for step in range(60)]
    images = torch.zeros(2, 3, 64, 96)
    assert rank0(images, step=7)[0].shape[-1] == rank0.size(7) == rank1(images, step=7)[0].shape[-1]


def test_multi_scale_resizes_the_batch_and_its_boxes_alike():
    resize = ft.MultiScaleResize([200], size_divisibility=32, mode="nearest")
    images = torch.zeros(2, 3, 96, 128)
    box = torch.tensor([[32.0, 16.0, 64.0, 48.0]])
    images[0, :, 16:48, 32:64] = 1.0  # the object the box names
    out, boxes = resize(images, box, step=0)
    # The longer side becomes 200, the shorter one 150, each rounded up to 32.
    assert tuple(out.shape) == (2, 3, 160, 224)
    x0, y0, x1, y1 = boxes[0].tolist()
    assert (x0, y0, x1, y1) == pytest.approx((32 * 224 / 128, 16 * 160 / 96, 64 * 224 / 128, 48 * 160 / 96))
    inside = out[0, 0, int(y0) + 1:int(y1) - 1, int(x0) + 1:int(x1) - 1]
    assert inside.numel() > 0 and bool((inside == 1).all())
    assert float(out[0].sum()) == pytest.approx(3 * (y1 - y0) * (x1 - x0), rel=0.05)
    # Boxes as torchvision's per-image targets hold them, and none.
    per_image = [box, torch.zeros(0, 4)]
    out_list = resize(images, per_image, step=0)[1]
    assert isinstance(out_list, list) and torch.equal(out_list[0], boxes) and out_list[1].shape == (0, 4)
    assert resize(images, step=0)[1] is None


def test_multi_scale_on_a_loaders_detection_batch(tmp_path):
    import os
    import PIL.Image
    for i in range(4):  # YOLO's layout: images/train beside labels/train
        for part in ("images", "labels"):
            os.makedirs(tmp_path / part / "train", exist_ok=True)
        PIL.Image.new("RGB", (48, 32), (40 * i, 90, 200)).save(tmp_path / "images" / "train" / f"{i}.png")
        (tmp_path / "labels" / "train" / f"{i}.txt").write_text(f"{i} 0.5 0.5 0.25 0.{i + 2}\n")
    data = datasets.YoloDetection(str(tmp_path / "images" / "train"),
                                  T.Compose([T.Resize((64, 96)), T.ToTensor()]))
    batch = next(iter(ft.DataLoader(data, batch_size=4)))
    resize = ft.MultiScaleResize([192])
    images, boxes = resize(batch["image"], batch["boxes"], step=3)
    assert tuple(images.shape) == (4, 3, 128, 192)
    torch.testing.assert_close(boxes, batch["boxes"] * 2)


def test_multi_scale_refuses_what_it_cannot_resize():
    with pytest.raises(ValueError, match="non-empty list of sizes"):
        ft.MultiScaleResize([])
    with pytest.raises(ValueError, match="non-empty list of sizes"):
        ft.MultiScaleResize([320, 0])
    with pytest.raises(ValueError, match="whole numbers"):
        ft.MultiScaleResize(["big"])
    with pytest.raises(ValueError, match="size_divisibility"):
        ft.MultiScaleResize([320], size_divisibility=0)
    resize = ft.MultiScaleResize([320])
    with pytest.raises(TypeError, match="floating-point images"):
        resize(torch.zeros(2, 3, 8, 8, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\[B, C, H, W\]"):
        resize(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match="last dimension of 4"):
        resize(torch.zeros(2, 3, 8, 8), torch.zeros(5, 3))
