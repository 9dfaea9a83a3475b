"""Typed dependencies of the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.api.context import ApiContext

__all__ = ["ContextDep", "get_context"]


def get_context(request: Request) -> ApiContext:
    """The app's :class:`ApiContext`, set up by the lifespan."""
    ctx: ApiContext = request.app.state.ctx
    return ctx


ContextDep = Annotated[ApiContext, Depends(get_context)]
