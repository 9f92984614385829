"""cfn-lint rules: `cfn-lint -a src/orderbatch/lint/rules` or `-a orderbatch.lint.rules.throttle_safety`."""
