"""Lambda entry points: each parses its event, calls order_processing and returns."""
