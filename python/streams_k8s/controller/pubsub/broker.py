"""The subscription broker: keeps each namespace's board (`pubsub.board`) current and tells PEs.

Any change of an Export, an Import or a Job recomputes the board of its namespace. Every PE whose
document changed (exporting, importing, or subscribed before and no longer) and whose job still
exists gets a UDP datagram on port 10000 with its document, compact JSON; a document larger than
the runtime's 16 KiB buffer is sent as ``deadbeef`` instead, which makes the PE fetch it over HTTP.

Each Export's and Import's status says whom the board connected it to, and an Import's what it
asks for (`statuses`). An Import by properties carries a ``SubscriptionValid`` condition: False
(reason ``InvalidSubscription``, with a Warning Event) when its expression does not parse; it then
matches nothing by properties until its subscription is fixed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from streams_k8s.controller.kinds import EXPORTS, IMPORTS
from streams_k8s.controller.pubsub.board import Board, PeKey, compute_board
from streams_k8s.controller.pubsub.datagrams import PeDatagrams
from streams_k8s.controller.pubsub.statuses import (
    SUBSCRIPTION_VALID,
    changed_fields,
    export_status,
    import_status,
)
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.conditions import find_condition
from streams_k8s.k8s.controller import Requeue, generation_changed
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta

log = logging.getLogger(__name__)

MAX_DATAGRAM_BYTES = 16 * 1024  # the PE's receive buffer
FETCH = b"deadbeef"  # "fetch your board over HTTP"
_BOARD = "subscriptions"  # the one work item per namespace


def _came_or_went(old: Object | None, new: Object | None) -> bool:
    if old is None or new is None:
        return True
    return bool(meta(old).get("deletionTimestamp")) != bool(meta(new).get("deletionTimestamp"))


def datagram(document: dict[str, object]) -> bytes:
    data = orjson.dumps(document)
    return data if len(data) <= MAX_DATAGRAM_BYTES else FETCH


class SubscriptionBroker:
    def __init__(
        self,
        manager: Manager,
        jobs: Informer,
        exports: Informer,
        imports: Informer,
        datagrams: PeDatagrams,
    ) -> None:
        self.client = manager.client
        self.jobs, self.exports, self.imports = jobs, exports, imports
        self.datagrams = datagrams
        self.boards: dict[str, Board] = {}  # by namespace
        self.recorder: EventRecorder = manager.event_recorder("streams-subscription-broker")
        controller = manager.controller("subscriptions", self.reconcile)
        # only what the board reads: job existence, Export/Import specs (not their status writes)
        controller.watch(jobs, self._board_of, [_came_or_went])
        for informer in (exports, imports):
            controller.watch(informer, self._board_of, [generation_changed])

    @staticmethod
    def _board_of(obj: Object) -> list[ObjectKey]:
        return [ObjectKey(str(meta(obj).get("namespace") or ""), _BOARD)]

    def board(self, namespace: str) -> Board:
        return self.boards.get(namespace) or Board()

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        namespace = key.namespace
        live = [
            str(meta(j)["name"])
            for j in self.jobs.store.select(namespace)
            if not meta(j).get("deletionTimestamp")
        ]
        exports, imports = self.exports.store.select(namespace), self.imports.store.select(namespace)
        # CPU-bound for busy namespaces (every subscription against every export): off the loop
        board = await asyncio.to_thread(compute_board, exports, imports, live)
        previous = self.boards.get(namespace) or Board()
        self.boards[namespace] = board
        changed: list[PeKey] = [
            pe
            for pe in sorted(previous.documents.keys() | board.documents.keys())
            if previous.document(*pe) != board.document(*pe) and pe[0] in live
        ]
        await asyncio.gather(
            *(
                self.datagrams.send(job, pe, namespace, datagram(board.document(job, pe)))
                for job, pe in changed
            )
        )
        await self._report_status(namespace, board)
        return None

    async def _report_status(self, namespace: str, board: Board) -> None:
        """Each Export's and Import's status, as the board has it (written when it changes)."""
        for kind, informer, status_of in (
            (EXPORTS, self.exports, export_status),
            (IMPORTS, self.imports, import_status),
        ):
            for obj in informer.store.select(namespace):
                if meta(obj).get("deletionTimestamp"):
                    continue
                patch = changed_fields(obj, status_of(obj, board))
                if patch:
                    await self._write_status(kind, obj, patch, board)

    async def _write_status(self, kind: Resource, obj: Object, patch: dict[str, Any], board: Board) -> None:
        name, namespace = str(meta(obj)["name"]), str(meta(obj).get("namespace") or "")
        try:
            written = await self.client.patch_status(kind, name, patch, namespace)
        except ApiError as err:
            if err.not_found:
                return  # gone meanwhile
            raise
        problem = board.invalid.get(name)
        before = find_condition((obj.get("status") or {}).get("conditions") or [], SUBSCRIPTION_VALID)
        was_valid = (before or {}).get("status")
        if kind is IMPORTS and problem and was_valid != "False":
            await self.recorder.record(written, "Warning", "InvalidSubscription", problem)
