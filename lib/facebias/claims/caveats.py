"""Caveats shared by several papers' claims: one text each, so every claim that needs one
says the same thing."""

from __future__ import annotations

__all__ = ["SKIN_TONE_CAVEAT"]

#: Issue 29: what the DCGAN's "skin tone" groups are. Every DCGAN claim about skin-tone
#: groups says it in its evidence (the cosine is the reviewer's measurement on the committed
#: hyperplanes, quoted from the issue; the metrics do not hold it yet).
SKIN_TONE_CAVEAT = (
    "the DCGAN's skin-tone groups are the two sides of a learned direction (fitted to the ITA "
    "labeller) whose normal has cosine -0.93 with the learned luminance direction (issue 29): mostly "
    "exposure and colour cast, not validated as skin tone")
