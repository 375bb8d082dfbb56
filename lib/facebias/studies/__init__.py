"""One module per reproduced paper: the analysis functions the notebooks call."""
