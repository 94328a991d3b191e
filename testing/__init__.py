"""Test and benchmark scaffolding, not installed: a loopback OpenAI-compatible server, a scripted
policy for the real ``generate``, DISBench/search fixtures and a seeded generator of model responses.

Importable from the checkout (tests and bench put the repository root on ``sys.path``).
"""
