"""Trained models and how they run: the course model (a small LLaMA-style decoder whose weights
ship in assets/) and generation with its sampling rules and KV cache. Models are assembled from
parts and read text through the tokenizers. Imports: parts and text."""
