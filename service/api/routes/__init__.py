"""HTTP routers: thin adapters from requests to :mod:`service.api.services`."""
