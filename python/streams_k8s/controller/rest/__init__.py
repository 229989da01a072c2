"""The instance REST API the PE runtime calls (`rest.api`, a server) and its OpenAPI document
(`rest.openapi`)."""
