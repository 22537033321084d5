"""A native CocoDetection batch (tensors, padded) turned into what torch's
DataLoader gives for torchvision's CocoDetection wrapped with
wrap_dataset_for_transforms_v2 and a transforms.v2 pipeline, batched by
`lambda batch: tuple(zip(*batch))`: a tuple of images and a tuple of target
dicts, each holding the wrapper's keys in the wrapper's order, the tensors
as views of the batch wrapped in tv_tensors (Image, BoundingBoxes, Mask) as
torchvision's transforms leave them, and the annotation file's own values
("area", "iscrowd", "bbox", "category_id", "segmentation") as the lists the
wrapper copies from it.
"""

import copy


class DetectionV2Batches:
    """`keys`: the target's keys in the wrapper's order. `raw`: by image
    id, each raw key's list (one entry per annotation, crowds and objects
    SanitizeBoundingBoxes drops included, as the wrapper gives them), and
    None for an image without annotations (its target is its id alone).
    `sanitize`: SanitizeBoundingBoxes' (min_size, min_area), or None.
    `box_format`: the BoundingBoxFormat the boxes end in. `tv_tensors`:
    False after ToPureTensor (plain tensors). `image_tv`: the image is a
    tv_tensors.Image (ToImage) rather than a plain tensor (PILToTensor).
    `float_masks`: the masks as float32 0.0 and 1.0 (v2.ConvertImageDtype
    converts them too)."""

    def __init__(self, keys, raw, sanitize, box_format, tv_tensors, image_tv,
                 float_masks=False):
        self._keys = list(keys)
        self._raw = raw
        self._sanitize = sanitize
        self._box_format = box_format
        self._tv_tensors = tv_tensors
        self._image_tv = image_tv
        self._float_masks = float_masks

    def __call__(self, batch):
        import torch
        from torchvision import tv_tensors
        from torchvision.transforms.v2 import functional as F

        xyxy = tv_tensors.BoundingBoxFormat.XYXY
        images, sizes, counts = batch["image"], batch["image_size"], batch["boxes_lengths"]
        out_images, targets = [], []
        for i in range(len(sizes)):
            h, w = (int(v) for v in sizes[i])
            n = int(counts[i])
            image = images[i, :, :h, :w]
            if self._tv_tensors and self._image_tv:
                image = image.as_subclass(tv_tensors.Image)
            out_images.append(image)
            image_id = int(batch["image_id"][i])
            raw = self._raw[image_id]
            if raw is None:  # no annotation: the wrapper gives the id alone
                targets.append({"image_id": image_id})
                continue
            boxes = batch["boxes"][i, :n]
            keep = None
            if self._sanitize is not None:
                min_size, min_area = self._sanitize
                # torchvision's own test, on the boxes as they come out
                _, keep = F.sanitize_bounding_boxes(boxes, format=xyxy, canvas_size=(h, w),
                                                    min_size=min_size, min_area=min_area)
                if bool(keep.all()):
                    keep = None
            if keep is not None:
                boxes = boxes[keep]
            target = {}
            for key in self._keys:
                if key == "image_id":
                    target[key] = image_id
                elif key == "boxes":
                    target[key] = self._boxes(boxes, (h, w), tv_tensors, F)
                elif key == "masks":
                    masks = batch["masks"][i, :n, :h, :w]
                    masks = masks if keep is None else masks[keep]
                    masks = masks.to(torch.float32) if self._float_masks else masks
                    target[key] = masks.as_subclass(tv_tensors.Mask) if self._tv_tensors else masks
                elif key == "labels":
                    labels = batch["labels"][i, :n]
                    target[key] = labels if keep is None else labels[keep]
                else:  # the file's lists, fresh each time as the wrapper's are
                    target[key] = copy.deepcopy(raw[key])
            targets.append(target)
        return tuple(out_images), tuple(targets)

    def _boxes(self, boxes, canvas_size, tv_tensors, F):
        xyxy = tv_tensors.BoundingBoxFormat.XYXY
        if self._box_format != xyxy:  # ConvertBoundingBoxFormat after every geometric step
            boxes = F.convert_bounding_box_format(boxes, old_format=xyxy,
                                                  new_format=self._box_format)
        if not self._tv_tensors:
            return boxes
        return tv_tensors.BoundingBoxes(boxes, format=self._box_format, canvas_size=canvas_size)
