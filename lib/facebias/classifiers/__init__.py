"""Classifiers under test that are trained here (study 004), never the labeller:

* :mod:`facebias.classifiers.cnn`: a small CNN gender classifier (torch, CPU);
* :mod:`facebias.classifiers.probe`: a linear probe on face embeddings (sklearn).
"""
