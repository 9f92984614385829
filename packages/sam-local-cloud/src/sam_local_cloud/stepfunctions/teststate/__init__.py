"""TestState, AWS's API for running one state, answered by the local cloud as AWS answers it.

``definition`` is one state, or a whole state machine with ``stateName`` naming the state to test (also
inside a Map or Parallel). The state runs once with ``input``, ``variables`` and, with a mock, a given
``context`` object. ``mock`` replaces what the state calls (a Task's service, a Map's iterations, a
Parallel's branches) with ``result`` or ``errorOutput``; ``fieldValidationMode`` checks a result against the
service's API model as AWS does. ``stateConfiguration`` sets what earlier attempts would have:
``retrierRetryCount`` (how many retries already happened), ``mapIterationFailureCount`` (how many iterations
of a mocked Map failed). The answer is the state's ``status``:

- SUCCEEDED, with ``output`` and ``nextState`` (none after an End state);
- FAILED, with ``error`` and ``cause``;
- RETRIABLE: a retrier matches the error and has attempts left; the state does not wait or retry, the
  answer says which retrier (``inspectionData.errorDetails.retryIndex``) and the wait it would take
  (``retryBackoffIntervalSeconds``: IntervalSeconds x BackoffRate^retrierRetryCount, at most
  MaxDelaySeconds, without jitter);
- CAUGHT_ERROR: a catcher takes the error, with ``nextState`` its Next and ``output`` its output.

``inspectionLevel`` DEBUG or TRACE adds ``inspectionData``: the input and every data-flow step it went
through (afterInputPath, afterParameters/afterArguments, result, afterResultSelector, afterResultPath; for a
Map afterItemsPath, maxConcurrency and the tolerated failures), the variables given, and errorDetails.
An unmocked Task calls the local cloud's service (a Lambda Task invokes the local function) with the
``roleArn``'s credentials, as a state machine's Task does.

The modules: ``request`` (the request's members, checked), ``validation`` (what is refused once the state
is parsed, the mock against the service's API model included), ``interpreter`` (the state parsed alone and
run on moto's interpreter, which the run watches through listeners on moto's classes) and ``answer`` (the
answer, and the API action moto lacks). Their hooks are the concern ``test_state``; ``interpreter`` declares
its order against the concerns it shares targets with.

Ported from LocalStack (Apache License 2.0): ``localstack-core/localstack/services/stepfunctions/`` modules
``asl/component/test_state``, ``asl/eval/test_state``, ``asl/parse/test_state``,
``asl/static_analyser/test_state``, ``backend/test_state`` and ``test_state``, onto moto's interpreter (a
LocalStack port without TestState's 2025 features). Differences from that code: nothing on moto's classes
or objects is changed per request (a request's run is found from the environment it runs in, so
concurrent requests do not share it), a retriable error is reported without sleeping the backoff, and a
mocked Map checks its tolerated failures whenever the state declares a threshold.
"""

from __future__ import annotations


def register_hooks() -> None:
    """Registers TestState's listeners on moto's interpreter and its API action (moto is imported here)."""
    from sam_local_cloud.stepfunctions.teststate import answer, interpreter

    interpreter.register_hooks()
    answer.register_hooks()
