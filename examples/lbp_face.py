"""A face embedder to try the ``facebias`` commands with a model of your own: local binary
pattern (LBP) histograms (Ahonen, Hadid and Pietikainen, *Face description with local binary
patterns*, TPAMI 2006), written as a ``torch.nn.Module`` with no learned weights.

It is a classic hand-made baseline, far weaker than SFace or dlib, and stands in for the
network you would bring. Use it as ``torch:examples.lbp_face:build`` (from the repository
root), or export it to ONNX and use ``onnx:lbp_face.onnx``::

    python -m examples.lbp_face lbp_face.onnx

Input: NCHW float32 ``(pixel - 127.5) / 127.5`` RGB ArcFace crops of 112 x 112 px (the
defaults of a model spec). Output: per image, the square roots of the normalised 256-bin LBP
histograms of a 4 x 4 grid of cells (4,096 values), so the cosine of two outputs is the
Bhattacharyya coefficient of their histograms, averaged over the cells.
"""

from __future__ import annotations

import sys

import torch

GRID = 4


class LBPHistogram(torch.nn.Module):
    """LBP codes (8 neighbours at radius 1) of the grey image, histogrammed per grid cell."""

    def __init__(self, grid: int = GRID):
        super().__init__()
        self.grid = grid
        self.register_buffer("rgb", torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1))
        self.register_buffer("bins", torch.arange(256, dtype=torch.float32).view(1, 256, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grey = (x * self.rgb).sum(dim=1, keepdim=True)  # (n, 1, h, w)
        centre = grey[:, :, 1:-1, 1:-1]
        h, w = centre.shape[2], centre.shape[3]
        code = torch.zeros_like(centre)
        shifts = [(0, 0), (0, 1), (0, 2), (1, 2), (2, 2), (2, 1), (2, 0), (1, 0)]
        for bit, (dy, dx) in enumerate(shifts):
            code = code + (grey[:, :, dy:dy + h, dx:dx + w] >= centre).float() * float(2 ** bit)
        side = (min(h, w) // self.grid) * self.grid  # 108 of the 110 codes of a 112 px crop
        onehot = (code[:, :, :side, :side] == self.bins).float()  # (n, 256, side, side)
        cells = torch.nn.functional.avg_pool2d(onehot, side // self.grid)  # (n, 256, g, g): histograms
        return torch.sqrt(cells.flatten(1) + 1e-12)


def build() -> torch.nn.Module:
    """The model (``torch:examples.lbp_face:build``)."""
    return LBPHistogram().eval()


def export_onnx(path: str) -> None:
    """Write the model as ONNX with a dynamic batch (``onnx:PATH``), for 112 px input."""
    import warnings

    with warnings.catch_warnings():  # the legacy exporter's notices; the graph is checked by the tests
        warnings.simplefilter("ignore")
        torch.onnx.export(build(), (torch.zeros(1, 3, 112, 112),), path, dynamo=False, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    print(f"wrote {path}")


if __name__ == "__main__":
    export_onnx(sys.argv[1] if len(sys.argv) > 1 else "lbp_face.onnx")
