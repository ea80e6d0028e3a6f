"""The machinery of a training run, under the thin scripts of
`agents.scripts` (docs/architecture.md lists its modules)."""
