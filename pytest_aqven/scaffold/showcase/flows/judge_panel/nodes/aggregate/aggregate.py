def majority(votes: list[str]) -> dict:
    return {"winner": max(sorted(set(votes)), key=votes.count)}
