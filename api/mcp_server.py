"""tenure's MCP server on the official ``mcp`` SDK (low-level ``Server``: the tool schemas are
ours, as strict as the HTTP API, see ``api/mcp_schema.py``), built on ``AsyncClient``.

``build_server(client_for)`` makes the server for any transport: ``tenure mcp`` runs it over
stdio with one client; ``tenure serve`` serves it at ``/mcp`` (``api/mcp_mount.py``) with a
``client_for`` that builds a client per call from the HTTP request's own credentials, or the
``namespace`` argument of a host that cannot set headers.

Answers, refusals included (HELD, LOST, CONFLICT, rate limited), are tool results carrying
``{"data", "_provenance"}`` as structured content; bad arguments, an unknown outcome and an
answer whose receipt does not verify are tool errors (``isError``) that say why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from functools import cache
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from api.client import (
    Answer,
    AsyncClient,
    Conflict,
    LeaseHeld,
    LeaseLost,
    RateLimited,
    TenureError,
    Unavailable,
)
from api.client.core import new_request_id
from api.client.trust import Trust
from api.mcp_schema import OUTPUT_SCHEMA, RULES, ToolSpec, with_resource
from api.mcp_tools import BY_NAME, TOOLS
from verify.defaults import VERSION

ClientFor = Callable[
    [ServerRequestContext[Any], str | None], AbstractAsyncContextManager[AsyncClient]
]
"""A client for one tool call: the call's context and its ``namespace`` argument, if any,
which the client sends as the ``Tenure-Namespace`` header (never logged)."""
INSTRUCTIONS = (
    "tenure grants leases on named resources with fencing tokens and signed receipts. Take a "
    "lease with lease_acquire, renew it with lease_renew at a third of its ttl while you "
    "work, release it with lease_release when done. " + RULES
)


def build_server(client_for: ClientFor) -> Server[Any]:
    """The MCP server with every tenure tool; ``async with client_for(ctx, namespace) as
    client`` gives the client one tool call uses.

    ``ctx.request`` is the HTTP request under streamable HTTP (None over stdio), so a factory
    for ``/mcp`` can build the client from its Bearer key and ``Tenure-Namespace`` (and close
    it on exit); one that shares a client returns ``nullcontext(client)``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(spec) for spec in TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = BY_NAME.get(params.name)
        if spec is None:
            return _error(f"unknown tool {params.name!r}; tools: {', '.join(BY_NAME)}")
        arguments = params.arguments or {}
        problem = _invalid(spec.name, arguments)
        try:
            arguments = with_resource(spec, arguments) if problem is None else arguments
        except ValueError as wrong:
            problem = str(wrong)
        if problem is not None:
            return _error(f"invalid arguments for {spec.name}: {problem}")
        namespace = arguments.get("namespace")
        arguments = {k: v for k, v in arguments.items() if k != "namespace"}
        if "requestId" in spec.optional and "requestId" not in arguments:
            arguments = {**arguments, "requestId": new_request_id()}  # to name on a retry
        async with client_for(ctx, namespace) as client:
            return await _run(spec, client, arguments)

    return Server(
        "tenure",
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _run(
    spec: ToolSpec, client: AsyncClient, arguments: dict[str, Any]
) -> types.CallToolResult:
    try:
        answer = await spec.call(client, arguments)
    except (LeaseHeld, LeaseLost, Conflict, RateLimited) as refusal:
        if refusal.answer is None:
            return _error(str(refusal))
        return _result(refusal.answer, f"REFUSED ({type(refusal).__name__}): {refusal}")
    except Unavailable as error:
        again = arguments.get("requestId")
        retry = f"retry with the same requestId {again!r}" if again else "retry"
        return _error(
            f"OUTCOME UNKNOWN — never permission; {retry} or check with lease_get: {error}",
            error.answer,
        )
    except TenureError as error:  # InvalidRequest names the field; ReceiptInvalid the check
        return _error(f"{type(error).__name__}: {error}", error.answer)
    if isinstance(answer, dict):  # the checkpoint: its signed note is its proof
        return _result(Answer(answer, None, 200), "checkpoint")
    return _result(answer, str(answer.data.get("outcome") or answer.status))


def _tool(spec: ToolSpec) -> types.Tool:
    hints = types.ToolAnnotations(
        title=spec.name.replace("_", " "),
        read_only_hint=spec.read_only,
        destructive_hint=None if spec.read_only else spec.destructive,
        open_world_hint=False,
    )
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=OUTPUT_SCHEMA,
        annotations=hints,
    )


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(BY_NAME[name].input_schema)


def _invalid(name: str, arguments: dict[str, Any]) -> str | None:
    """The first schema violation, naming the argument and the rule; None if valid."""
    errors = sorted(_validator(name).iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(part) for part in first.path)
    return f"{where}: {first.message}" if where else first.message


def _structured(answer: Answer) -> dict[str, Any]:
    return {"data": answer.data, "_provenance": answer.provenance}


def _result(answer: Answer, summary: str) -> types.CallToolResult:
    structured = _structured(answer)
    text = f"{summary}\n{json.dumps(answer.data, indent=1)}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )


def _error(message: str, answer: Answer | None = None) -> types.CallToolResult:
    structured = _structured(answer) if answer is not None else None
    return types.CallToolResult(
        content=[types.TextContent(text=message)], structured_content=structured, is_error=True
    )


def serve_stdio(url: str, api_key: str | None, namespace: str | None, trust: Trust | None) -> None:
    """``tenure mcp``: serve over stdin/stdout until the host closes them."""
    anyio.run(_serve_stdio, url, api_key, namespace, trust)


async def _serve_stdio(
    url: str, api_key: str | None, namespace: str | None, trust: Trust | None
) -> None:
    async with AsyncClient(url, api_key, namespace, trust) as client:

        def client_for(
            ctx: ServerRequestContext[Any], named: str | None
        ) -> AbstractAsyncContextManager[AsyncClient]:
            if named is None:
                return nullcontext(client)
            return AsyncClient(url, api_key, named, trust)  # this call's own tenant

        server = build_server(client_for)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
