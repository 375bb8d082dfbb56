"""Known-truth worlds: deterministic simulators whose planted truth the studies must recover.

One module per world (import the module you need; nothing is re-exported here, so a
study's DVC stage depends only on its own world):

* :mod:`facebias.worlds.bfw`: synthetic BFW pair table (study 002, BFW thresholds);
  its parameters are in :mod:`facebias.worlds.bfw_config` (re-exported by ``bfw``); its
  schema lives with the loader of the published table, :mod:`facebias.datasets.bfw`.
* :mod:`facebias.worlds.batest`: synthetic images with nuisance factors and scored pairs
  (study 003, BA-test).
* :mod:`facebias.worlds.rapid`: noisy web-search queries scored by simulated systems
  (study 001, rapid test).
* :mod:`facebias.worlds.gender_classifier`: a gender classifier whose errors have planted
  causes (study 004, transects).
* :mod:`facebias.worlds.toy_fr`: a toy face-recognition system with planted group noise
  (study 000, HCIC).
"""
