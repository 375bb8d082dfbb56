"""Loaders for released data sets in their published schemas."""
