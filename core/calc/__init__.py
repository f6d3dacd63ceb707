"""Calculators for real models: the registry of published architectures (LLaMA, Mistral,
Mixtral, GPT-2, the course model), their parameter counts, FLOPs and bytes, rooflines of the
hardware they run on, and wall-clock timing of parts. Numbers about a model, not the model
itself. Imports: parts at most (never models or lab)."""
