"""Test and benchmark scaffolding, not installed: a loopback OpenAI-compatible server, a scripted
policy for the real ``generate``, a web-search corpus and a seeded generator of model responses (the
DISBench fixture is the product's: ``lookcloser.eval.fixtures.write_disbench``).

Importable from the checkout (tests and bench put the repository root on ``sys.path``).
"""
