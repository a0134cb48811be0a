"""Provider adapters for realtime voice agents (paper appendix D.2), one package per provider.

Each package has ``events.py`` (the provider's wire models, looked up by event ``type``) and an
adapter module, and exports ``make_adapter(model, env)`` for :mod:`runtime.agents.registry`.
Shared machinery: :mod:`._transport` (websocket, error mapping, virtual-clock lockstep),
:mod:`._realtime` (the adapter skeleton, playout mirror, settings) and :mod:`._openai_style`
(the response lifecycle OpenAI, xAI and StepFun share). See ``docs/adapters.md``.
"""
