def flag(score: float) -> dict:
    return {"flagged": score < 0.5}
