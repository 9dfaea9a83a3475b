# One image for the API and the worker: `omtl api` (default) or `omtl worker`.
# Build: docker build -t omtl .   Run: docker compose up   (see docker-compose.yml)

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/omtl
# Dependencies first, from pyproject.toml alone, so code changes reuse this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt \
    && /opt/omtl/bin/pip install -r requirements.txt
COPY README.md ./
COPY learners ./learners
COPY evaluation ./evaluation
COPY service ./service
RUN /opt/omtl/bin/pip install --no-deps . && /opt/omtl/bin/omtl --version

FROM python:3.11-slim
RUN useradd --system --uid 10001 --user-group --home-dir /app --create-home --shell /usr/sbin/nologin omtl
COPY --from=build /opt/omtl /opt/omtl
# The learners' numba kernels, and the worker's pass over a batch's task names, are
# compiled once into the image, so containers start warm.
ENV NUMBA_CACHE_DIR=/opt/omtl/numba-cache
RUN /opt/omtl/bin/python -m service.warm \
    && chmod -R a+rX /opt/omtl/numba-cache
ENV PATH=/opt/omtl/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    OPENBLAS_NUM_THREADS=1 \
    OMTL_API_HOST=0.0.0.0 \
    OMTL_API_PORT=8000 \
    OMTL_WORKER_METRICS_PORT=9101 \
    OMTL_DATA_DIR=/app/data
WORKDIR /app
USER omtl
EXPOSE 8000 9101
ENTRYPOINT ["omtl"]
CMD ["api"]
