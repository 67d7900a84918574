"""What the app's model callers keep in a call's journal entry beside the router's answer."""

SENT_KEY = "sent_messages"
"""The journal field holding the messages a model call sent (written by
tui/launch/agents_wiring.py, read by tui/app/model_calls.py)."""
