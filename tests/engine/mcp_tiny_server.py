"""A tiny MCP server for the engine's tests: `lookup_order` and `fail`, over stdio, or over streamable HTTP on
127.0.0.1 with `--http PORT` (then a request without the header `X-Token: <$TINY_TOKEN>` is refused)."""
import os
import sys

try:
    from mcp.server.mcpserver import MCPServer as Server  # mcp 2
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server  # mcp 1

app = Server("tiny")


@app.tool()
def lookup_order(order_id: str) -> dict:
    """The status of an order."""
    return {"order_id": order_id, "status": "shipped" if order_id.startswith("A") else "lost"}


@app.tool()
def fail(reason: str) -> dict:
    """Always fails."""
    raise ValueError(reason)


def serve_http(port: int) -> None:
    import uvicorn

    token = os.environ["TINY_TOKEN"]
    inner = app.streamable_http_app()

    async def guarded(scope, receive, send):
        headers = dict(scope.get("headers") or ())
        if scope["type"] == "http" and headers.get(b"x-token", b"").decode() != token:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await inner(scope, receive, send)

    async def lifespan_aware(scope, receive, send):
        await (inner if scope["type"] == "lifespan" else guarded)(scope, receive, send)

    uvicorn.run(lifespan_aware, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        serve_http(int(sys.argv[2]))
    else:
        app.run()
