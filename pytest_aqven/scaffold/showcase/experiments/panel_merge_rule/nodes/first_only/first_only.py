def first_only(votes: list[str]) -> dict:
    return {"winner": votes[0]}
