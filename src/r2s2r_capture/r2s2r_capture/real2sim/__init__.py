"""The real2sim pipeline: from a capture bag to a MuJoCo world with its variations."""
