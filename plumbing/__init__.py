"""Shared plumbing: the few mechanisms engine, router, research and the app all need, written once.

YAML reading under one set of limits (:mod:`plumbing.yaml_reading`), the opening rules of the
workbench's SQLite files and what their errors mean (:mod:`plumbing.sqlite_files`), the base of
the boundary models (:mod:`plumbing.frozen`), the retriever protocol (:mod:`plumbing.retriever`),
the longest model answer kept (:mod:`plumbing.answer_bound`), text from outside made safe to show
(:mod:`plumbing.untrusted_text`), writes into a folder that follow no link
(:mod:`plumbing.folder_writes`) and what a host name means for what is sent to it
(:mod:`plumbing.network`). A leaf: it imports nothing of the project, so every layer may import
it.
"""
