def prepare(message: str) -> dict:
    tidy = " ".join(message.split())
    return {"message": tidy, "topic": tidy.split(":")[0].strip().lower()}
