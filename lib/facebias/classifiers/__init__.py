"""Gender classifiers under test (study 004), never the labeller:

* :mod:`facebias.classifiers.cnn`: a small CNN gender classifier trained here (torch, CPU);
* :mod:`facebias.classifiers.probe`: a linear probe on face embeddings trained here (sklearn);
* :mod:`facebias.classifiers.user`: a classifier the user brings (``onnx:PATH`` or
  ``torch:MODULE:FUNCTION``), run on whole renders as P(male); nothing is trained.
"""
