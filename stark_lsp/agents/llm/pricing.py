"""Optional cost accounting: US dollars per million tokens, by model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    prompt_per_mtok: float
    completion_per_mtok: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt_per_mtok + completion_tokens * self.completion_per_mtok) / 1e6


def price_of(prices: dict[str, Price] | None, model: str) -> Price | None:
    """Exact model name first, then the longest matching prefix."""
    if not prices:
        return None
    if model in prices:
        return prices[model]
    best = max((k for k in prices if model.startswith(k)), key=len, default=None)
    return prices[best] if best else None
