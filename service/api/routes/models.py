"""``/models``: create, reconfigure, inspect and delete models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response

from service.api.access import Forbidden, authorize, check_model, visible_models
from service.api.deps import ContextDep
from service.api.jsonio import json_response, parse_body, read_json
from service.api.openapi import ERRORS, needs, raw_body
from service.api.schemas import (
    MODEL_NAME_PATTERN,
    ModelInfo,
    ModelPut,
    RelationsResponse,
    RollbackRequest,
    SnapshotVersions,
    TaskStats,
)
from service.api.services import exporting, modelling
from service.api.services.relations import MAX_TOP_K
from service.auth import Principal, Role

router = APIRouter(prefix="/models", tags=["models"])

ModelName = Annotated[str, Path(pattern=MODEL_NAME_PATTERN, description="Model name.")]


def may(request: Request, role: Role, model: str) -> Principal:
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
    principal = may(request, Role.ADMIN, model)
    body = parse_body(ModelPut, await read_json(request))
    info, created = await modelling.put(ctx, model, body)
    response.status_code = 201 if created else 200
    action = "model.create" if created else "model.reconfigure"
    await request.app.state.access.audit(
        principal, action, model, learner=body.learner, generation=info["generation"]
    )
    return info


@router.post(
    "/import",
    status_code=201,
    response_model=ModelInfo,
    responses=ERRORS,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
        }
    }
    | needs(Role.ADMIN),
)
async def import_model(
    ctx: ContextDep,
    request: Request,
    as_: Annotated[
        str | None,
        Query(alias="as", pattern=MODEL_NAME_PATTERN, description="Name of the new model."),
    ] = None,
) -> dict[str, Any]:
    """Create a model from a file of ``GET /models/{m}/export`` (the body, as it is): 201
    with its description, 409 when the name is taken, 422 for a file that is not a valid
    export (format, checksum, limits). A key limited to some models names the new model
    (``as``), one of its models; the import is recorded in the audit trail."""
    principal = authorize(request, Role.ADMIN)
    if as_ is not None:
        check_model(principal, as_)
    elif principal.models is not None:
        raise Forbidden(
            f"the key {principal.name!r} is limited to some models: name the new model (as=)"
        )
    info = await exporting.import_file(ctx, await request.body(), as_)
    await request.app.state.access.audit(principal, "model.import", info["name"])
    return info


@router.get(
    "/{model}", response_model=ModelInfo, responses=ERRORS, openapi_extra=needs(Role.VIEWER)
)
async def get_model(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """A model's configuration, snapshot version and age, and counts."""
    may(request, Role.VIEWER, model)
    return await modelling.describe(ctx, model)


@router.delete("/{model}", status_code=204, responses=ERRORS, openapi_extra=needs(Role.ADMIN))
async def delete_model(ctx: ContextDep, model: ModelName, request: Request) -> Response:
    """Delete a model with its log, snapshot and streams (recorded in the audit trail)."""
    principal = may(request, Role.ADMIN, model)
    await modelling.delete(ctx, model)
    await request.app.state.access.audit(principal, "model.delete", model)
    return Response(status_code=204)


@router.get(
    "/{model}/tasks",
    response_model=list[TaskStats],
    responses=ERRORS,
    openapi_extra=needs(Role.VIEWER),
)
async def get_tasks(
    ctx: ContextDep,
    model: ModelName,
    request: Request,
    offset: Annotated[int, Query(ge=0, description="First task (index order).")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Most tasks returned.")] = 10_000,
) -> Response:
    """Per-task counts, online accuracy (rMSE and MAE for regression models), label requests
    and (ROM learners) outlier scores, a page at a time; the number of tasks is in the
    ``X-Total-Count`` header. Serialised by orjson (thousands of rows)."""
    may(request, Role.VIEWER, model)
    rows, total = await modelling.tasks(ctx, model, offset, limit)
    response = json_response(rows)
    response.raw_headers.append((b"x-total-count", str(total).encode()))
    return response


def _task_list(tasks: str | None) -> list[str] | None:
    if tasks is None:
        return None
    return [t for t in tasks.split(",") if t]


@router.get(
    "/{model}/relations",
    response_model=RelationsResponse,
    responses=ERRORS,
    openapi_extra=needs(Role.VIEWER),
)
async def get_relations(
    ctx: ContextDep,
    model: ModelName,
    request: Request,
    tasks: Annotated[
        str | None, Query(description="Comma-separated task names: rows and columns to return.")
    ] = None,
    top_k: Annotated[
        int | None,
        Query(ge=1, le=MAX_TOP_K, description="Add the top_k most related tasks of each task."),
    ] = None,
    matrix: Annotated[
        bool, Query(description="Include the matrix (false: only kind, meaning and top).")
    ] = True,
) -> Response:
    """The task relation matrix (null when the learner has none), named by task, with its
    ``kind`` and ``meaning``. A full matrix is sent for at most 500 tasks; larger models
    name a subset (``tasks=``) or ask ``top_k`` with ``matrix=false``."""
    may(request, Role.VIEWER, model)
    return json_response(await modelling.relations(ctx, model, _task_list(tasks), top_k, matrix))


@router.get(
    "/{model}/export",
    responses={200: {"content": {"application/zip": {}}}, **ERRORS},
    response_class=Response,
    openapi_extra=needs(Role.VIEWER),
)
async def export_model(ctx: ContextDep, model: ModelName, request: Request) -> Response:
    """The model as one file: configuration, latest snapshot and task names (a zip of JSON
    and numpy arrays, no pickle; versioned and checksummed). ``POST /models/import`` or
    ``omtl import`` read it."""
    may(request, Role.VIEWER, model)
    data = await exporting.export(ctx, model)
    return Response(
        data,
        media_type="application/zip",
        headers={"content-disposition": f'attachment; filename="{model}.omtl.zip"'},
    )


@router.get(
    "/{model}/snapshots",
    response_model=SnapshotVersions,
    responses=ERRORS,
    openapi_extra=needs(Role.VIEWER),
)
async def get_snapshots(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """The snapshot versions ``POST /models/{m}/rollback`` can restore (``OMTL_SNAPSHOT_KEEP``)."""
    may(request, Role.VIEWER, model)
    await modelling.describe(ctx, model)  # 404 for an unknown model
    return {"model": model, "versions": await exporting.versions(ctx, model)}


@router.post(
    "/{model}/rollback",
    response_model=ModelInfo,
    responses=ERRORS,
    openapi_extra=raw_body(RollbackRequest) | needs(Role.ADMIN),
)
async def rollback(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """Restore a kept snapshot and discard the log after it: the model moves to a new
    generation whose state is that snapshot (its owner reloads it); events after it are
    gone, not replayed. 404 for a version that is not kept. Recorded in the audit trail."""
    principal = may(request, Role.ADMIN, model)
    body = parse_body(RollbackRequest, await read_json(request))
    info = await exporting.rollback(ctx, model, body.version)
    await request.app.state.access.audit(principal, "model.rollback", model, version=body.version)
    return info
