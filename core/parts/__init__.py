"""The transformer's pieces: the attention kernel and the multi-head module, masks, position
encodings, RoPE, LayerNorm and RMSNorm, the feed-forward layers and their activations, the KV
cache, and the trace that records named intermediates. Each piece is a function or a small
module that a model assembles. Imports: torch only, and other modules of parts."""
