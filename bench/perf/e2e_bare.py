"""The baseline of the /predict benchmark: a bare FastAPI endpoint doing the same dot product.

It parses the same JSON body with orjson, looks the task's weight vector up in
a fixed ``(K, d)`` matrix (loaded from the ``.npy`` file named by
``OMTL_BENCH_WEIGHTS``) and answers the score and label; no validation beyond
what numpy does, no Redis, no metrics. Served by ``bench/perf/e2e.py`` with
``uvicorn bench.perf.e2e_bare:create_app --factory``.
"""

from __future__ import annotations

import os

import numpy as np
import orjson
from fastapi import FastAPI, Request
from starlette.responses import Response

__all__ = ["create_app"]


def create_app() -> FastAPI:
    """The bare app over the weights in ``$OMTL_BENCH_WEIGHTS`` (tasks named t0 .. t{K-1})."""
    weights = np.load(os.environ["OMTL_BENCH_WEIGHTS"], allow_pickle=False)
    index = {f"t{k}": k for k in range(weights.shape[0])}
    app = FastAPI()

    @app.post("/predict")
    async def predict(request: Request) -> Response:
        body = orjson.loads(await request.body())
        x = np.asarray(body["x"], dtype=np.float64)
        task = body["task"]
        score = float(weights[index[task]] @ x)
        answer = {"label": 1.0 if score >= 0 else -1.0, "score": score, "task": task}
        return Response(orjson.dumps(answer), media_type="application/json")

    return app
