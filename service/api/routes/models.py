"""``/models``: create, reconfigure, inspect and delete models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response

from service.api.access import authorize, check_model, visible_models
from service.api.deps import ContextDep
from service.api.jsonio import parse_body, read_json
from service.api.openapi import ERRORS, needs, raw_body
from service.api.schemas import (
    MODEL_NAME_PATTERN,
    ModelInfo,
    ModelPut,
    RelationsResponse,
    TaskStats,
)
from service.api.services import modelling
from service.auth import Principal, Role

router = APIRouter(prefix="/models", tags=["models"])

ModelName = Annotated[str, Path(pattern=MODEL_NAME_PATTERN, description="Model name.")]


def _may(request: Request, role: Role, model: str) -> Principal:
    """The request's principal if it may act as ``role`` on ``model`` (else 403)."""
    principal = authorize(request, role)
    check_model(principal, model)
    return principal


@router.get("", response_model=list[ModelInfo], openapi_extra=needs(Role.VIEWER))
async def list_models(ctx: ContextDep, request: Request) -> list[dict[str, Any]]:
    """Every model with its configuration, snapshot version and counts (those the key may use)."""
    principal = authorize(request, Role.VIEWER)
    listed = await modelling.list_all(ctx)
    allowed = set(visible_models(principal, [m["name"] for m in listed]))
    return [m for m in listed if m["name"] in allowed]


@router.put(
    "/{model}",
    response_model=ModelInfo,
    responses={201: {"model": ModelInfo}, **ERRORS},
    openapi_extra=raw_body(ModelPut) | needs(Role.ADMIN),
)
async def put_model(
    ctx: ContextDep, model: ModelName, request: Request, response: Response
) -> dict[str, Any]:
    """Create a model (201) or reconfigure it (200; a changed configuration starts it afresh).

    The body is parsed like every other (a body that is not JSON, or not UTF-8, is a
    422); a model over the memory budget or the task maximum is a 422 with the figure.
    Both are recorded in the audit trail with the key's name.
    """
    principal = _may(request, Role.ADMIN, model)
    body = parse_body(ModelPut, await read_json(request))
    info, created = await modelling.put(ctx, model, body)
    response.status_code = 201 if created else 200
    action = "model.create" if created else "model.reconfigure"
    await request.app.state.access.audit(
        principal, action, model, learner=body.learner, generation=info["generation"]
    )
    return info


@router.get(
    "/{model}", response_model=ModelInfo, responses=ERRORS, openapi_extra=needs(Role.VIEWER)
)
async def get_model(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """A model's configuration, snapshot version and age, and counts."""
    _may(request, Role.VIEWER, model)
    return await modelling.describe(ctx, model)


@router.delete("/{model}", status_code=204, responses=ERRORS, openapi_extra=needs(Role.ADMIN))
async def delete_model(ctx: ContextDep, model: ModelName, request: Request) -> Response:
    """Delete a model with its log, snapshot and streams (recorded in the audit trail)."""
    principal = _may(request, Role.ADMIN, model)
    await modelling.delete(ctx, model)
    await request.app.state.access.audit(principal, "model.delete", model)
    return Response(status_code=204)


@router.get(
    "/{model}/tasks",
    response_model=list[TaskStats],
    responses=ERRORS,
    openapi_extra=needs(Role.VIEWER),
)
async def get_tasks(ctx: ContextDep, model: ModelName, request: Request) -> list[dict[str, Any]]:
    """Per-task counts, online accuracy, label requests and (ROM learners) outlier scores."""
    _may(request, Role.VIEWER, model)
    return await modelling.tasks(ctx, model)


@router.get(
    "/{model}/relations",
    response_model=RelationsResponse,
    responses=ERRORS,
    openapi_extra=needs(Role.VIEWER),
)
async def get_relations(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """The task relation matrix (null when the learner has none), named by task."""
    _may(request, Role.VIEWER, model)
    return await modelling.relations(ctx, model)
