"""facebias: measuring bias in face recognition and face analysis.

Conventions used throughout (see ``facebias.metrics``): scores are similarities and a
pair is a *match* iff ``score > t``.
"""

__version__ = "0.1.0"
