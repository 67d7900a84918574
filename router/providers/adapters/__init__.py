"""One module per API family, each holding the adapters of its kinds (router/providers/base.py
says what an adapter carries). :mod:`router.providers.registry` imports every module here and
lists every adapter class that names a ``kind``: a new family is a module here and its codec in
router/fault/codecs/, nothing else."""
