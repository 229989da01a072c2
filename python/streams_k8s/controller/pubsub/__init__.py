"""Publish/subscribe of streams between jobs: the board of who exchanges streams (`board`, pure),
the broker keeping it current and notifying PEs (`broker`, a reconciler, with `datagrams`), and
the `/api/subscriptions` routes of the REST API (`api`, with their bodies in `bodies`)."""
