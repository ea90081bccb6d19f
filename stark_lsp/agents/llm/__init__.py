"""LLM agents over any OpenAI-compatible endpoint: see docs/AGENTS.md."""
