"""A tiny MCP server for the engine's tests (stdio): `lookup_order` and `fail`."""
try:
    from mcp.server.mcpserver import MCPServer as Server      # mcp 2
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server          # mcp 1

app = Server("tiny")


@app.tool()
def lookup_order(order_id: str) -> dict:
    """The status of an order."""
    return {"order_id": order_id, "status": "shipped" if order_id.startswith("A") else "lost"}


@app.tool()
def fail(reason: str) -> dict:
    """Always fails."""
    raise ValueError(reason)


if __name__ == "__main__":
    app.run()
