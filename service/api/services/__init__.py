"""The service layer: what each endpoint does, independent of HTTP routing."""
