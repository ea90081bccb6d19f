"""Evaluator facade (being written): evaluate(task, source) -> EvalResult."""
