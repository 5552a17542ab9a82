"""One module per scenario table: the keys, their defaults, ranges and help text."""
