"""Output formats for findings."""
