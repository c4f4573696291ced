# SPDX-License-Identifier: Apache-2.0
"""Native image ops (ferry::image), to pass to Builder.map. Sizes are (height, width), or an
int for a square, as in torchvision.

decode_image(**options): bytes -> ferry.Image (JPEG, PNG, WebP, BMP).
decode_random_resized_crop(size, flip=0.0, ...): bytes -> ferry.Image, torchvision's
    RandomResizedCrop (and RandomHorizontalFlip with probability flip) decoding only the crop.
resize(size, interp='bilinear'): ferry.Image -> ferry.Image.
horizontal_flip: ferry.Image -> ferry.Image, mirrored.
to_tensor: ferry.Image -> ferry.Tensor (height x width x channels, uint8), without a copy.
"""
from ferry._ferry import image as _image

decode_image = _image.decode_image
decode_random_resized_crop = _image.decode_random_resized_crop
horizontal_flip = _image.horizontal_flip
resize = _image.resize
to_tensor = _image.to_tensor

__all__ = ["decode_image", "decode_random_resized_crop", "horizontal_flip", "resize", "to_tensor"]
