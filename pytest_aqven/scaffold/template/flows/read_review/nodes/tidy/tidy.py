def tidy(title: str, text: str) -> dict:
    joined = " ".join(f"{title}. {text}".split())
    return {"text": joined, "words": len(joined.split())}
