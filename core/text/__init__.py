"""From what a learner types to token ids: cleaning of typed text, the character tokenizer the
course model reads, and byte-pair encoding learned on the course corpus. Imports nothing of
ours outside text (torch at most)."""
