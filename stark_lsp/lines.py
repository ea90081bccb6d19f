"""Splitting text into lines that keep their endings (shared by markers and edits)."""


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on ``\\n`` only (a ``\\r`` stays with its line)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
