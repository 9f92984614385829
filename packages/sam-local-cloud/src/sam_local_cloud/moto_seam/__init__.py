"""The seam between the local cloud and moto: the only package under ``src/`` that imports moto.

- ``hooks``: the registry every change to moto's behaviour goes through. Each concern registers
  listeners (``around``), replacements (``replace``) or additions (``add``) on moto's classes and
  modules; ``hooks.install()`` wraps each target once, chaining listeners in the order the concerns
  declare where they register (``hooks.order``).
- ``records``: the engine's own per-object records (per execution, map run, state), kept beside moto's
  objects instead of as attributes on them.
- ``stepfunctions`` and ``services``: every moto class, function and module the rest of the engine uses,
  imported here and handed on by name, so moto's layout is spelled in one place.
- ``interpreter_objects``: ``Protocol``s of the moto objects the engine reads (an execution, its worker, an
  interpreter environment, a Map's job pool...), with only the members it uses.
- ``interpreter_internals`` and ``backend_internals``: every private member of moto's the engine reads, one
  function each under a name of our own; nothing outside the seam reads one (``tests/test_private_reads.py``).
- ``installers``: installs every group of hooks (Step Functions' interpreter, DynamoDB, EventBridge,
  moto's model registry) for a process.
- ``fingerprints``: the signature and source hash of everything above, recorded against the pinned moto
  (``fingerprints.json``). A test fails naming each target that a different moto changed; see
  docs/architecture.md ("Upgrading moto").
"""

from sam_local_cloud.moto_seam.deferred_packages import defer_package_inits

# Before any of moto's modules is imported through the seam: see deferred_packages.
defer_package_inits()
