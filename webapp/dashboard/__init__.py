"""The signed-in web UI: server-rendered pages over the same actions as the REST API."""
