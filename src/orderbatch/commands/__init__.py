"""One module per `orderbatch` command."""
