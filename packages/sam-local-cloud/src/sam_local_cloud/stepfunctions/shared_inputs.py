"""The Map state's input, read by every iteration's ItemSelector, shared instead of copied per item.

moto sets each iteration's ``$states.input`` to a deep copy of the whole Map input before evaluating its
``ItemSelector`` (or ``Parameters``): for an inline Map over the input's own array that is one copy of
every item per item, O(items²) time for one batch. Sharing the one value is safe because nothing
writes to it while a selector runs:

- JSONPath reads ``$.x`` from the stack's top (which moto never copied) and ``$states.input`` through
  ``States.get_input``/``States.extract``, which copy what they return; the ``.$`` fields and
  ``$$.Map.Item.Value`` deep-copy the value they put in the selector's output; intrinsic functions build
  new values (``States.JsonMerge`` copies its first object before merging);
- JSONata reads ``$states`` through jsonata-python, whose functions build new sequences (``$append``,
  ``$sort``, ``$reverse``, ``$shuffle`` copy their array), and the result is turned into fresh containers
  (``jsonata.to_json_value``).

The selector's output, the iteration's own input, is still copied (it is small, and the iteration's
states may change it).
"""

from __future__ import annotations

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import ProgramEnvironment, StateData


def share_map_input(states: StateData, map_state_input: object) -> None:
    """``States.reset`` without its deep copy: ``$states.input`` is the Map's input itself."""
    data = internals.state_data(states)
    data["input"] = map_state_input
    data["result"] = None
    data["errorOutput"] = None


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import InlineItemProcessorWorker

    def eval_input(self: object, env_frame: ProgramEnvironment) -> None:
        selector = internals.item_selector_of(self)
        if not selector:
            return
        map_state_input = internals.worker_environment(self).stack[-1]
        share_map_input(env_frame.states, map_state_input)
        env_frame.stack.append(map_state_input)
        selector.eval(env_frame)
        env_frame.states.reset(input_value=env_frame.stack[-1])

    hooks.replace(InlineItemProcessorWorker, "_eval_input", eval_input, concern="shared_inputs")
