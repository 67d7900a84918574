"""Workers: ``workbench worker`` processes that take queued runs from the PostgreSQL store.

queue.py is what the server and the command line call (queue a run, queue it again after an
answer, cancel it); worker.py is the worker process (jobs, leases, the reaper).
"""
