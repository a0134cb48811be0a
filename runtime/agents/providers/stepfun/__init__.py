"""StepFun realtime (``stepfun[:MODEL]``): see :mod:`.adapter` and :mod:`.events`."""

from runtime.agents.providers.stepfun.adapter import StepFunAdapter, make_adapter

__all__ = ["StepFunAdapter", "make_adapter"]
