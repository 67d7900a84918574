"""Shared plumbing: the few mechanisms every layer needs, written once.

A leaf: it imports nothing of the project, so engine, router, research, agents and the app may
all import it. :mod:`plumbing.untrusted_text` makes text from outside safe to show or write.
"""
