"""AWS's limits and names the tools rely on, each with the AWS documentation page it comes from.

The app's own rules (the order-ID pattern, the inline cap of 500 orders, ...) are not here: they are in
functions/order_processing/contract.py, which the app ships with.
"""

from __future__ import annotations

# The error Step Functions reports when Lambda refuses an invocation with 429 TooManyRequestsException
# (quota exceeded): https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
# and https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html (Errors).
THROTTLE_ERROR = "Lambda.TooManyRequestsException"

# Without MaxConcurrency (or with 0) an inline Map runs up to 40 iterations at once:
# https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html
INLINE_MAP_CONCURRENCY_LIMIT = 40

# A Distributed Map runs up to 10,000 child workflow executions in parallel:
# https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html
DISTRIBUTED_MAP_CONCURRENCY_LIMIT = 10_000

# The largest input or output of a task, state or execution, 256 KiB of UTF-8:
# https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html
MAX_STATE_PAYLOAD_BYTES = 256 * 1024

# Concurrent executions per Region by default, and how fast a function scales (1,000 execution
# environments every 10 seconds): https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
# and https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html
LAMBDA_DEFAULT_ACCOUNT_CONCURRENCY = 1_000
LAMBDA_SCALING_ENVIRONMENTS_PER_WINDOW = 1_000
LAMBDA_SCALING_WINDOW_SECONDS = 10.0

# Standard workflows' StateTransition token bucket (5,000 burst, refilled 5,000 per second in the largest
# Regions, 800 elsewhere) and StartExecution (300 per second; 150 elsewhere):
# https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html#service-limits-api-state-throttling
# and #service-limits-api-action-throttling-general on the same page.
STATE_TRANSITIONS_PER_SECOND = 5_000.0
STATE_TRANSITIONS_BURST = 5_000.0
SMALL_REGION_STATE_TRANSITIONS_PER_SECOND = 800.0
START_EXECUTIONS_PER_SECOND = 300.0

# S3's documented error codes and their statuses (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html,
# the list of error codes). Any S3 operation may answer them; its model lists only a few.
S3_DOCUMENTED_STATUSES = {
    "AccessDenied": 403,
    "BadDigest": 400,
    "EntityTooLarge": 400,
    "EntityTooSmall": 400,
    "IncompleteBody": 400,
    "InvalidArgument": 400,
    "InvalidBucketName": 400,
    "InvalidDigest": 400,
    "InvalidRange": 416,
    "InvalidRequest": 400,
    "InvalidStorageClass": 400,
    "InvalidTag": 400,
    "InvalidPart": 400,
    "InvalidPartOrder": 400,
    "InvalidURI": 400,
    "KeyTooLongError": 400,
    "MalformedXML": 400,
    "MalformedPolicy": 400,
    "MalformedACLError": 400,
    "MetadataTooLarge": 400,
    "MethodNotAllowed": 405,
    "MissingContentLength": 411,
    "MissingRequestBodyError": 400,
    "NoSuchBucket": 404,
    "NoSuchKey": 404,
    "NoSuchUpload": 404,
    "NoSuchVersion": 404,
    "NoSuchBucketPolicy": 404,
    "NoSuchTagSet": 404,
    "NoSuchLifecycleConfiguration": 404,
    "NoSuchCORSConfiguration": 404,
    "NoSuchWebsiteConfiguration": 404,
    "ServerSideEncryptionConfigurationNotFoundError": 404,
    "ObjectLockConfigurationNotFoundError": 404,
    "OwnershipControlsNotFoundError": 404,
    "NoSuchPublicAccessBlockConfiguration": 404,
    "ReplicationConfigurationNotFoundError": 404,
    "PreconditionFailed": 412,
    "RequestTimeTooSkewed": 403,
    "BucketAlreadyExists": 409,
    "BucketAlreadyOwnedByYou": 409,
    "BucketNotEmpty": 409,
    "InvalidBucketState": 409,
    "OperationAborted": 409,
    "IllegalLocationConstraintException": 400,
    "InvalidLocationConstraint": 400,
    "NotImplemented": 501,
    "SignatureDoesNotMatch": 403,
    "InvalidAccessKeyId": 403,
    "RequestHeaderSectionTooLarge": 400,
    "UnexpectedContent": 400,
    "InvalidObjectState": 403,
    "NoSuchObjectLockConfiguration": 404,
    "InvalidEncryptionAlgorithmError": 400,
    "NoSuchConfiguration": 404,
    "CrossLocationLoggingProhibited": 403,
    "InvalidTargetBucketForLogging": 400,
    "InvalidToken": 400,
    "ExpiredToken": 400,
    "AccessForbidden": 403,
    "BadRequest": 400,
    "InvalidSecurity": 403,
    "InvalidPolicyDocument": 400,
    "InvalidPayer": 403,
    "TooManyBuckets": 400,
    "AuthorizationHeaderMalformed": 400,
    "MaxMessageLengthExceeded": 400,
    "RequestTimeout": 400,
    "SlowDown": 503,
    "NoSuchAccessPoint": 404,
    "InvalidBucketAclWithObjectOwnership": 400,
    "UnresolvableGrantByEmailAddress": 400,
    # Account-regional bucket namespaces (2025): a name without the suffix its namespace header asks for.
    "InvalidNamespaceHeader": 400,
}
