"""Tools to run, prove and tune throttle-safe order batches on Step Functions and Lambda."""

__version__ = "0.1.0"
