"""Stand-ins for what the host provides, for `costart serve` on a laptop and the demo:
a simulated claim driver (chosen by ``serve --simulate-claims``) and the reports a
well-behaved node agent would make. Never used in production (ADR 0054)."""
