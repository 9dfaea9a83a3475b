"""``/models``: create, reconfigure, inspect and delete models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response

from service.api.deps import ContextDep
from service.api.jsonio import parse_body, read_json
from service.api.openapi import ERRORS, raw_body
from service.api.schemas import (
    MODEL_NAME_PATTERN,
    ModelInfo,
    ModelPut,
    RelationsResponse,
    TaskStats,
)
from service.api.services import modelling

router = APIRouter(prefix="/models", tags=["models"])

ModelName = Annotated[str, Path(pattern=MODEL_NAME_PATTERN, description="Model name.")]


@router.get("", response_model=list[ModelInfo])
async def list_models(ctx: ContextDep) -> list[dict[str, Any]]:
    """Every model with its configuration, snapshot version and counts."""
    return await modelling.list_all(ctx)


@router.put(
    "/{model}",
    response_model=ModelInfo,
    responses={201: {"model": ModelInfo}, **ERRORS},
    openapi_extra=raw_body(ModelPut),
)
async def put_model(
    ctx: ContextDep, model: ModelName, request: Request, response: Response
) -> dict[str, Any]:
    """Create a model (201) or reconfigure it (200; a changed configuration starts it afresh).

    The body is parsed like every other (a body that is not JSON, or not UTF-8, is a
    422); a model over the memory budget or the task maximum is a 422 with the figure.
    """
    body = parse_body(ModelPut, await read_json(request))
    info, created = await modelling.put(ctx, model, body)
    response.status_code = 201 if created else 200
    return info


@router.get("/{model}", response_model=ModelInfo, responses=ERRORS)
async def get_model(ctx: ContextDep, model: ModelName) -> dict[str, Any]:
    """A model's configuration, snapshot version and age, and counts."""
    return await modelling.describe(ctx, model)


@router.delete("/{model}", status_code=204, responses=ERRORS)
async def delete_model(ctx: ContextDep, model: ModelName) -> Response:
    """Delete a model with its log, snapshot and streams."""
    await modelling.delete(ctx, model)
    return Response(status_code=204)


@router.get("/{model}/tasks", response_model=list[TaskStats], responses=ERRORS)
async def get_tasks(ctx: ContextDep, model: ModelName) -> list[dict[str, Any]]:
    """Per-task counts, online accuracy, label requests and (ROM learners) outlier scores."""
    return await modelling.tasks(ctx, model)


@router.get("/{model}/relations", response_model=RelationsResponse, responses=ERRORS)
async def get_relations(ctx: ContextDep, model: ModelName) -> dict[str, Any]:
    """The task relation matrix (null when the learner has none), named by task."""
    return await modelling.relations(ctx, model)
