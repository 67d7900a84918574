"""One module per API family: the fault server's side of its wire (router/fault/codec.py).
Each adapter names its codec (``ProviderAdapter.codec``)."""
