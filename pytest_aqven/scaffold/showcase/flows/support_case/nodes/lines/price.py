PRICES = {"desk lamp": 49.0, "floor lamp": 129.0, "bulb": 6.5, "lamp shade": 24.0}


def price(product: str) -> dict:
    return {"price": PRICES[product]}      # an unknown product fails its item, which the map skips
