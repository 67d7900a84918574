"""The run API's client: a `workbench server`'s runs read as a run store (remote_store.py), a
run's live events followed over SSE across dropped connections and server restarts
(follow.py), over one bounded HTTP client carrying ``$WORKBENCH_TOKEN`` (http.py)."""
