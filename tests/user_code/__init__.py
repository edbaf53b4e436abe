"""User code for the error-location tests: each mistake sits on a `# LINE-MARK` line."""
