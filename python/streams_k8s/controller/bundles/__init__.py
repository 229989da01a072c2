"""Bundles: fetching a Job's `.sab` through a content-addressed cache (`fetch`), and the redis-protocol
repository PE pods fetch it from (`repository`, a server)."""
