"""Shared vocabulary of every run: the task spec, the event log, audio frames, canonical values,
text helpers, durable writes.
"""
