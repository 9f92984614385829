"""Imports its helper from the layer, as Lambda puts /opt/python on the path."""

from shared_greeting import greet


def handler(event, context):
    return {"greeting": greet(event["name"])}
