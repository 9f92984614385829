"""Also in the zip layer listed after this one: the later layer's copy wins."""

GREETING = "from the first layer"
