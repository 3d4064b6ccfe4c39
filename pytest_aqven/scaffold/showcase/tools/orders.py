"""The shop's order book, a stand-in for a real lookup: an order id ending in a digit has shipped."""


def lookup_order(order_id: str) -> dict:
    if not order_id.startswith("o_"):
        return {"status": "unknown"}
    return {"status": "shipped" if order_id[-1].isdigit() else "delivered"}
