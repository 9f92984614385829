"""The guard's table of X-Amz-Target prefixes and signing names is botocore's models' own."""

from __future__ import annotations

import botocore.session

from sam_local_cloud.request_checks import GUARDED_SERVICES, SIGNING_NAMES, TARGET_PREFIXES


def test_the_target_prefixes_and_signing_names_are_the_models() -> None:
    session = botocore.session.get_session()
    prefixes, signing_names = {}, {"s3-object-lambda": "s3"}
    for name in GUARDED_SERVICES:
        model = session.get_service_model(name)
        if model.metadata.get("targetPrefix"):
            prefixes[model.metadata["targetPrefix"]] = name
        signing_names[model.metadata.get("signingName") or model.endpoint_prefix] = name
        signing_names.setdefault(model.endpoint_prefix, name)

    assert prefixes == TARGET_PREFIXES
    assert signing_names == SIGNING_NAMES
