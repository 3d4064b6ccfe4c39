def choose(winner: str, answer_a: str, answer_b: str) -> dict:
    return {"draft": answer_b if winner == "b" else answer_a}
