def handler(event, ctx):
    return {"Return": "HelloWorld"}
