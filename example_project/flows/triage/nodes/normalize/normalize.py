def normalize(subject: str, body: str) -> dict:
    text = " ".join(f"{subject}. {body}".lower().split())
    return {"text": text, "words": len(text.split())}
