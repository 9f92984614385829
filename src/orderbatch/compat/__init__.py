"""Other people's SAM apps on the local cloud: each deployed with `local up` and run as its README says.

``manifest`` reads the list of apps (provenance, input, what the README says happens), ``sources`` takes
an app out of a checkout of its repository at the recorded commit, ``runner`` deploys and runs it in its
own `orderbatch local up` process and compares the outcome, ``report`` prints the pass rates and causes.
"""
