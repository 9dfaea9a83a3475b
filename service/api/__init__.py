"""The HTTP API: ``create_app()`` builds the FastAPI application (see :mod:`service.api.app`)."""
