"""A conformance suite: Step Functions executions recorded against AWS, replayed on the local cloud.

The cases ship with the package, in orderbatch/conformance/cases/ (extracted from LocalStack's AWS-recorded
snapshots by tests/conformance/extract.py); ``orderbatch conformance`` runs them and prints the pass rate.
"""
