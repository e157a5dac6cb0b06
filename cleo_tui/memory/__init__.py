"""Memory semantics over a brain: mapping, tokenizers, tags, pruner, curation. No Textual."""
