"""Fault experiments on the local cloud, and the fault flags of `orderbatch local up`.

``flags``: ``--faults``/``--fault``/``--noisy-neighbour`` into one fault plan. ``crash_matrix``: every
crash point of every task function, crashed once and audited (with ``crash_cases`` and ``crash_results``).
The fault kinds and their injection are the local Lambda service's
(``sam_local_cloud.lambda_service.faults``). Nothing is imported here: `local up` reads its flags
without loading the crash matrix's local cloud.
"""
