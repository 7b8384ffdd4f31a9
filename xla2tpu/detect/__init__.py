"""Rule detection on CPython's ast tree."""
