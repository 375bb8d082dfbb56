"""Caveats shared by several papers' claims: one text each, so every claim that needs one
says the same thing."""

from __future__ import annotations

__all__ = ["FACE_DARKNESS_CAVEAT"]

#: Issue 29: what the DCGAN's lighter / darker groups are. Every DCGAN claim about them says
#: it in its evidence; the gate's measured values are in ``synthetic_faces_dcgan_details.json``
#: (``skin_gate``) and on the synthetic_faces_dcgan page.
FACE_DARKNESS_CAVEAT = (
    "on the DCGAN the lighter / darker groups are the two sides of a learned direction fitted to "
    "-ITA of face-skin pixels; no variant of it passes the skin gate declared in advance "
    "(synthetic_faces_dcgan skin_gate: the dark end leaves the real-skin ITA range), so it is face darkness, "
    "not skin tone, and a paper's skin-tone statement is compared with a face-darkness measurement")
