def resolve(status: str) -> dict:
    return {"resolution": "refund" if status == "shipped" else "replace"}
