"""The typed Python client of `costart serve`, for users' own scripts and tools.

    from costart.client import Client
    from costart.projections import GroupView

    with Client("https://costart.example:8443", token) as api:
        groups = api.call_list("/v1/groups", GroupView, [("label", "team=rl")])
        group = api.call("GET", "/v1/groups/grpo-run-42", dict)

`Client` is the one the CLI and the node agent use (`costart.rest.client`): it follows
the leader across a leader and its standbys, walks every page of a list operation, and
resumes the watch stream without skipping or repeating an event; `Client.follow_log`
reads a task's output (`LogChunk`s) as it grows and across its restarts. Error answers raise
`ApiError` (status, message, the spec field at fault).
"""

from costart.rest import ApiError, Client, LogChunk, WatchClosed, WatchEvent

__all__ = ["ApiError", "Client", "LogChunk", "WatchClosed", "WatchEvent"]
