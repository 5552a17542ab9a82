"""Each stage alone: the bodies of the stage commands, a stage run over a sample and
summarised as plain data (not to be confused with a *study*, several scenarios run
together: :mod:`mcengine.scenario.study`).

``mcengine yield``, ``reliability`` and ``roofline`` (through :mod:`mcengine.api`) return
what these functions compute; the calibration anchors of :mod:`mcengine.validation`
reuse the roofline one. Each returns a dict in the docs/interface.md JSON shape (without the
``scenario``/``seed``/size/``elapsed_s`` envelope the API adds); none prints.
"""
