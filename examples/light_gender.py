"""A gender classifier to try ``facebias transects --classifier`` with: a hand-built toy that
has learnt nothing but a shortcut, written as a ``torch.nn.Module`` with no learned weights.

It calls a face male when the left half of the face region is lit more brightly than the
right half: the light direction that ``transects_dcgan``'s training set ties to gender (every
woman lit from the right, ``shortcut_female_high``), i.e. the extreme of what the study's
shortcut CNN may pick up. It reads no gender cue at all, so the transect analysis must find
its cause: its errors against the labeller's perceived gender come from the *incongruent*
light level (women lit from the left, men from the right), with no main effect of face
darkness; on the confounded observational sample, where darker faces come with the
incongruent light, an analysis that records only gender and tone blames tone. (Darker faces
have smaller luminance differences, so its cue is weaker on them: a tone x incongruence
interaction that the confound tests report.) Use it as
``torch:examples.light_gender:light_gender`` (from the repository root), or export it to
ONNX and use ``onnx:light_gender.onnx``::

    python -m examples.light_gender light_gender.onnx

Input: the whole render as NCHW float32 ``(pixel - 127.5) / 127.5`` RGB at any square size
(the defaults of a classifier spec: 112 x 112 px). Output: one logit of "male" per image,
``GAIN * (left - right)``, where ``left`` and ``right`` are the mean grey levels (0.299 R +
0.587 G + 0.114 B, in the input's [-1, 1] units) of the rows 1/4..3/4 and the columns
1/8..1/2 and 1/2..7/8 of the image; P(male) = sigmoid(logit) (``output=logit``, the default).
"""

from __future__ import annotations

import sys

import torch

#: Logit per unit of grey-level difference ([-1, 1] units): on the DCGAN's transects the
#: logit averages +3.0 at the low light level (lit from the left) and -2.3 at the high one.
GAIN = 10.0


class LightGender(torch.nn.Module):
    """P(male) logit from the left-right light asymmetry of the face region."""

    def __init__(self, gain: float = GAIN):
        super().__init__()
        self.gain = float(gain)
        self.register_buffer("rgb", torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grey = (x * self.rgb).sum(dim=1)  # (n, h, w)
        h, w = grey.shape[1], grey.shape[2]
        rows = grey[:, h // 4 : (3 * h) // 4]
        left = rows[:, :, w // 8 : w // 2].mean(dim=(1, 2))
        right = rows[:, :, w // 2 : (7 * w) // 8].mean(dim=(1, 2))
        return (self.gain * (left - right)).unsqueeze(1)  # (n, 1): one logit of "male"


def light_gender() -> torch.nn.Module:
    """The model (``torch:examples.light_gender:light_gender``)."""
    return LightGender().eval()


def export_onnx(path: str, size: int = 112) -> None:
    """Write the model as ONNX for ``size`` px input with a dynamic batch (``onnx:PATH``)."""
    torch.onnx.export(light_gender(), (torch.zeros(1, 3, size, size),), path, dynamo=False, input_names=["x"],
                      output_names=["logit"], dynamic_axes={"x": {0: "n"}, "logit": {0: "n"}})


if __name__ == "__main__":
    export_onnx(sys.argv[1] if len(sys.argv) > 1 else "light_gender.onnx")
