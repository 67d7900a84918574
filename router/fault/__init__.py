"""The loopback fault-injecting provider server (DESIGN §7): a real HTTP server that speaks every
API family the router speaks and plays scripted faults, for the tests and the chaos demo.

``server.py`` serves; ``script.py`` is the script's shape and ``playback.py`` where each provider
is in it; ``codec.py`` is what one API family's side of the wire is, ``codecs/`` one module per
family, and ``protocols.py`` the table of them the server dispatches on; ``demo.py`` writes the
router config that points providers at a running server.
"""
