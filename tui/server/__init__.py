"""`workbench server`: the run API over HTTP (DESIGN §13).

FastAPI on uvicorn (app.py, serve.py) in front of the shared PostgreSQL run store
(services.py): runs listed and read, their events followed live as Server-Sent Events resumable
by ``Last-Event-ID`` (stream.py, over one ``LISTEN`` connection: feed.py), prompts answered,
runs started, resumed, forked and cancelled through the workers' queue (control.py), providers'
health, reports. A bearer token guards every route but the health check (auth.py); errors are
one line of JSON, as the CLI prints them (errors.py); request bodies are bounded (limits.py).
"""
