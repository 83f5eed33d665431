"""One adapter per runtime: each drives its runtime against a case replay."""
