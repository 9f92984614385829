"""A module that only the layer provides."""


def greet(name):
    return f"hello {name}, from the layer"
