"""The presentation layer: every table and figure, rendered from the commands' documents.

* :mod:`.tables`: rich tables of every command's JSON document;
* :mod:`.figures`: PNG figures of `run` / `compare`;
* :mod:`.sensitivity`: tables and figures of `sweep` and `sensitivity`.

Nothing here computes a model number: it reads documents (and a run's streaming
summaries for the CDF figures) and renders them.
"""
