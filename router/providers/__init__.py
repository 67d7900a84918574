"""Remote providers: what an adapter is (base.py), one adapter module per API family
(adapters/), the registry that lists them by kind (registry.py), and the HTTP provider that
sends their calls (http.py). The package itself imports nothing, so reading the config (which
needs the registry) does not load httpx."""
