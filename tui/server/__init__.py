"""`workbench server`: the run API over HTTP (DESIGN §13).

FastAPI on uvicorn (app.py, serve.py) in front of the shared PostgreSQL run store
(services.py): runs listed and read, their events followed live as Server-Sent Events resumable
by ``Last-Event-ID`` (stream.py, over one ``LISTEN`` connection: feed.py), prompts answered,
runs started, resumed and cancelled through the workers' queue (control.py), providers'
health, reports. A bearer token guards every route but the health check (auth.py); errors are
one line of JSON, as the CLI prints them (errors.py); request bodies (limits.py) and live
streams (``--max-streams``) are bounded.
"""

MAX_STREAMS = 200
"""Live event streams a server follows at once unless ``--max-streams`` says otherwise (each
holds a connection and a watch); uvicorn's connection limit (serve.py) is the hard bound
behind it. Here, in the package's light first module, so `workbench server --help` shows it
without importing the server."""
