"""The judge of "no request of ours was refused" on the real control plane (`control_plane.audit`)."""

from __future__ import annotations

import json
from pathlib import Path

from streams_k8s.control_plane.audit import refused

USER = "system:serviceaccount:streams:streams-k8s-operator"


def _event(code: int, message: str, user: str = USER) -> str:
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "user": {"username": user},
            "verb": "patch",
            "requestURI": "/apis/streams.ibm.com/v1/namespaces/streams/streamspes/a-1/status",
            "responseStatus": {"code": code, "message": message},
        }
    )


def test_lost_races_and_abandoned_requests_are_no_refusals(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    answers = [
        (200, ""),
        (409, "the object has been modified"),  # a lost race on a resourceVersion
        (422, "the server rejected our request due to an error in our request"),  # a failed `test`
        (500, "context canceled"),  # the client gave up
        (422, 'StreamsPE.streams.ibm.com "a-1" is invalid: status.launchCount: Invalid value: -1'),
        (500, "etcdserver: request timed out"),
        (403, "forbidden"),
    ]
    lines = [_event(code, message) for code, message in answers]
    lines.append(_event(403, "forbidden", user="someone-else"))
    log.write_text("\n".join(lines) + "\n")
    assert [(a.code, a.message) for a in refused(log, {USER})] == answers[4:]
