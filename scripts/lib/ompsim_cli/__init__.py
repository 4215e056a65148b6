"""The ompsim command-line tools (one module per subcommand)."""
