"""The change feed: the durable history read forward from a change id, filtered, for those who follow the graph
(the API's event stream, MCP's resource subscriptions).

It reads the store's history, not a queue in memory, so it sees every process's changes: writers are serialised
and a change's id is given in its write transaction, so once a change is visible so are all with smaller ids, and
reading on from the last id seen misses and repeats nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from kgplan.errors import StoreError
from kgplan.graph.model import LISTS, ChangeSlice, Delta
from kgplan.graph.world import WorldGraph

BATCH = 500  # changes read at once


def newest(graph: WorldGraph) -> int:
    """The id of the newest change (0 if none): one indexed read."""
    head = graph.changes(1)
    return head[0].id if head else 0


def changes_after(graph: WorldGraph, after: int, limit: int = BATCH) -> list[ChangeSlice]:
    """The summaries of the first `limit` changes with ids above `after`, oldest first."""
    if limit < 1:
        return []
    low = max(after, 0)
    found = [c for c in graph.changes(limit, low + limit + 1)[::-1] if c.id > low]
    if found or newest(graph) <= low:
        return found
    # no id in (low, low + limit] but newer ones: the ids jumped (a store cleared and begun again, sqlite's ids
    # going on from the old ones): bisect for the first id above `low` (the history reads newest first)
    high = newest(graph)  # some id lies in (low, high]
    while high - low > limit:
        mid = (low + high) // 2
        below = graph.changes(1, mid + 1)
        if below and below[0].id > low:
            high = below[0].id
        else:
            low = mid
    return [c for c in graph.changes(limit, low + limit + 1)[::-1] if c.id > low]


def read_on(graph: WorldGraph, after: int, interest: Interest | None = None, limit: int = BATCH
            ) -> tuple[list[ChangeSlice], int]:
    """The changes of interest among the next `limit` after `after`, oldest first, and the id to read on after: the
    last one read (`after` if none), or 0 if the history began again (the store was cleared and begun anew)."""
    batch = changes_after(graph, after, limit)
    if not batch:
        return [], (0 if newest(graph) < after else after)
    return [c for c in batch if interest is None or interest.matches(graph, c)], batch[-1].id


@dataclass(frozen=True)
class Interest:
    """Which changes a follower wants: those touching an entity (a fact naming it, the entity made or removed, a
    mark on it), a predicate (a fact or a mark of it), both (a fact or mark of the predicate about the entity),
    from a source (user, nl, sensor, plan, load, undo). None: any."""

    entity: str | None = None
    predicate: str | None = None
    source: str | None = None

    def matches(self, graph: WorldGraph, c: ChangeSlice) -> bool:
        """Whether the change is of interest (a change whose summary is cut is read whole if the part shown does
        not settle it)."""
        if self.source is not None and c.delta.source != self.source:
            return False
        if (self.entity is None and self.predicate is None) or self._touches(c.delta):
            return True
        if all(len(getattr(c.delta, k)) == c.sizes[k] for k in LISTS):
            return False
        whole = graph.change_slice(c.id, 0, None)
        return whole is not None and self._touches(whole.delta)

    def _touches(self, d: Delta) -> bool:
        facts = ((f.predicate, f.args) for f in (*d.add, *d.remove))
        marks = ((u.predicate, (u.entity,)) for u in (*d.unknown, *d.known))
        if any(self.predicate in (None, p) and (self.entity is None or self.entity in args)
               for p, args in (*facts, *marks)):
            return True
        return self.predicate is None and self.entity in {*d.removed_names(), *(e.name for e in d.new_entities)}


async def heads(graph: WorldGraph, every: float) -> AsyncIterator[int]:
    """The newest change's id, now and each time it changes (polled every `every` seconds, off the event loop; a
    store that cannot be read for a moment is read again at the next poll)."""
    last = None
    while True:
        try:
            head = await asyncio.to_thread(newest, graph)
        except StoreError:
            head = last
        if head != last:
            last = head
            yield head
        await asyncio.sleep(every)
