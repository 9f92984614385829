"""A Docker-free local AWS cloud: moto, a real-process Lambda service and the template deployer."""
