"""The experiments single lessons run: seeded toy weights, attention on typed text, the course
model's heads and blocks taken apart, RoPE's effect on scores, permutation, embedding maps.
Each module serves one or two lessons and is built on the rooms below. Imports: anything in
core."""
