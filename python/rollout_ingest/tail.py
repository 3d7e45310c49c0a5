"""RolloutTail: every rollout of a table once, for one rank of a data-parallel job, over Arrow Flight.

The server (``rollout-ingest serve``, ``--flight-port``) splits a read into shares by the input partition of each
key's newest row; rank ``r`` of ``world_size`` reads share ``r`` and only it, so the ranks get every rollout once
between them. Each answer names the ticket that reads on from where it ended; the tail keeps the ticket of the last
answer whose rows have all been handed out (in ``state_path`` when given), so a rank restarted from it resumes
exactly where it stopped: nothing handed out twice, nothing skipped.

pyarrow is the only requirement. When torch is installed RolloutTail is a ``torch.utils.data.IterableDataset``;
inside a ``DataLoader`` with workers each worker reads a share of its rank's (``world_size * num_workers`` shares).
"""

import json
import os
import random
import tempfile
import time

import pyarrow.flight as flight

try:  # torch is optional: with it the tail is an IterableDataset
    import torch.utils.data as _torch_data

    _Base = _torch_data.IterableDataset
except ImportError:  # pragma: no cover - exercised where torch is absent
    _torch_data = None
    _Base = object

NEXT_TICKET = b"rollout.next_ticket"
MORE = b"rollout.more"


def _rank_and_world():
    """This process's rank and the job's world size: torch.distributed when it runs, else RANK / WORLD_SIZE."""
    if _torch_data is not None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _identity(row):
    return row.get("record_id"), row.get("source_partition"), row.get("source_offset")


class RolloutTail(_Base):
    """Iterates the rollouts of one share of a table as dicts (column -> value), each once.

    location: the Flight address ``serve`` prints (``grpc+tcp://host:8093``, or ``grpc+tls://`` when it serves TLS).
    tls_root_certs: PEM of the certificates to trust for ``grpc+tls`` (None: the system's).
    token: a bearer token with the read role (None when the server asks none).
    rank, world_size: this reader's share (default: torch.distributed, else RANK / WORLD_SIZE, else 0 of 1).
    columns: the columns to read (None: every column); filters: the HTTP API's filters (``experiment``, ...).
    table: the table's name when the server serves many.
    state_path: a file keeping the ticket to resume from; read at start, replaced after each answer handed out.
    follow: keep tailing once caught up (a trainer on fresh rollouts), or stop there (one pass over the table).
    poll_seconds: how long to wait before asking again once caught up.
    shuffle_buffer: rows held and handed out in random order (0: in the order read); resume stays exact, as an
        answer's ticket is kept only once every row of it has left the buffer.
    include_deletes: also hand out deletes (rows with ``_deleted`` True); by default they are skipped.
    retry_seconds: how long a call the server turns away for now (too many reads of the table at once, a restart)
        is retried, with growing pauses, before the error is raised.
    """

    def __init__(self, location, token=None, rank=None, world_size=None, columns=None, filters=None, table=None,
                 state_path=None, follow=True, poll_seconds=1.0, shuffle_buffer=0, seed=0, include_deletes=False,
                 batch_rows=None, max_offsets=None, retry_seconds=300.0, tls_root_certs=None):
        if _Base is not object:
            super().__init__()
        default_rank, default_world = _rank_and_world()
        self.rank = default_rank if rank is None else rank
        self.world_size = default_world if world_size is None else world_size
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in [0, {self.world_size}), was {self.rank}")
        self.location = location
        self.tls_root_certs = tls_root_certs
        self.token = token
        self.columns = columns
        self.filters = dict(filters or {})
        self.table = table
        self.state_path = state_path
        self.follow = follow
        self.poll_seconds = poll_seconds
        self.shuffle_buffer = shuffle_buffer
        self.seed = seed
        self.include_deletes = include_deletes
        self.batch_rows = batch_rows
        self.max_offsets = max_offsets
        self.retry_seconds = retry_seconds
        self._ticket = None
        self._handed = {}  # answer number -> identities of its rows handed out, while the answer is open
        # identities handed out after a restored ticket, skipped when read again (a row's identity is never handed
        # out twice otherwise, so the set is kept as it is: at most one answer's rows per open answer)
        self._skip = set()

    # -- the share this iterator reads ---------------------------------------------------------------------------

    def _share(self):
        """(index, count) of this iterator's share: the rank's, split again among DataLoader workers."""
        index, count = self.rank, self.world_size
        if _torch_data is not None:
            worker = _torch_data.get_worker_info()
            if worker is not None:
                index, count = self.rank * worker.num_workers + worker.id, self.world_size * worker.num_workers
        return index, count

    def _options(self):
        headers = [(b"authorization", b"Bearer " + self.token.encode())] if self.token else []
        return flight.FlightCallOptions(headers=headers)

    def _params(self):
        params = {k: str(v) for k, v in self.filters.items()}
        if self.columns:
            # a row's identity (key, partition, offset) tells a restored state which rows it had handed out
            identity = [c for c in ("record_id", "source_partition", "source_offset") if c not in self.columns]
            params["columns"] = ",".join(list(self.columns) + identity)
        if self.batch_rows:
            params["batch_rows"] = str(self.batch_rows)
        if self.max_offsets:
            params["max_offsets"] = str(self.max_offsets)
        return params

    def _state_file(self, index, count):
        if self.state_path is None:
            return None
        return self.state_path if count == self.world_size else f"{self.state_path}.{index}-of-{count}"

    def _first_ticket(self, client, index, count, state_file):
        if state_file is not None and os.path.exists(state_file):
            with open(state_file, "rb") as f:
                return flight.Ticket(f.read())
        command = {"read": "scan", "shares": count, "params": self._params()}
        if self.table is not None:
            command["table"] = self.table
        descriptor = flight.FlightDescriptor.for_command(json.dumps(command))
        info = self._retrying(lambda: client.get_flight_info(descriptor, self._options()))
        return info.endpoints[index].ticket

    def _retrying(self, call):
        """Runs call, again after a pause while the server answers 'unavailable' (busy, restarting)."""
        deadline = time.monotonic() + self.retry_seconds
        pause = 0.1
        while True:
            try:
                return call()
            except (flight.FlightUnavailableError, flight.FlightTimedOutError):
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, 5.0)

    def _read(self, client, ticket):
        reader = client.do_get(ticket, self._options())
        return reader.read_all(), reader.schema.metadata or {}

    @staticmethod
    def _save(state_file, ticket):
        if state_file is None:
            return
        directory = os.path.dirname(os.path.abspath(state_file))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".rollout-tail-")
        with os.fdopen(fd, "wb") as f:
            f.write(ticket.ticket)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, state_file)  # atomic: a crash leaves the old ticket or the new one

    def state_dict(self):
        """Where this tail stands, exactly, for a trainer's own checkpoint (restore it with load_state_dict): the
        ticket after the last answer handed out whole, and the rows handed out of the answers after it."""
        handed = [list(identity) for rows in self._handed.values() for identity in rows]
        return {"ticket": None if self._ticket is None else self._ticket.ticket.decode(), "handed": handed}

    def load_state_dict(self, state):
        self._ticket = None if state.get("ticket") is None else flight.Ticket(state["ticket"].encode())
        self._skip = {tuple(identity) for identity in state.get("handed", [])}

    # -- reading --------------------------------------------------------------------------------------------------

    def __iter__(self):
        index, count = self._share()
        state_file = self._state_file(index, count)
        client = (flight.FlightClient(self.location) if self.tls_root_certs is None
                  else flight.FlightClient(self.location, tls_root_certs=self.tls_root_certs))
        try:
            ticket = self._ticket or self._first_ticket(client, index, count, state_file)
            rng = random.Random(self.seed + index)
            buffer = []  # (answer number, row)
            open_answers = {}  # answer number -> [rows still buffered, its next ticket]
            answer = 0
            while True:
                table, metadata = self._retrying(lambda: self._read(client, ticket))
                next_ticket = flight.Ticket(metadata[NEXT_TICKET])
                more = metadata.get(MORE, b"false") == b"true"
                rows = [r for r in table.to_pylist() if self.include_deletes or not r.get("_deleted")]
                if self._skip:
                    rows = [r for r in rows if _identity(r) not in self._skip]
                answer += 1
                open_answers[answer] = [len(rows), next_ticket]
                self._handed[answer] = []
                for row in rows:
                    buffer.append((answer, row))
                    if len(buffer) > self.shuffle_buffer:
                        yield self._hand_out(buffer, rng, open_answers, state_file)
                if not self.shuffle_buffer:
                    self._settle(open_answers, state_file)  # an empty answer moves the ticket on too
                ticket = next_ticket
                if not more:
                    if not self.follow:
                        break
                    time.sleep(self.poll_seconds)
            while buffer:
                yield self._hand_out(buffer, rng, open_answers, state_file)
            self._settle(open_answers, state_file)
        finally:
            client.close()

    def _hand_out(self, buffer, rng, open_answers, state_file):
        # called when the consumer asks for a row: every row handed out before has been taken, so settle first
        self._settle(open_answers, state_file)
        answer, row = buffer.pop(rng.randrange(len(buffer)) if self.shuffle_buffer else 0)
        open_answers[answer][0] -= 1
        self._handed[answer].append(_identity(row))
        return row

    def _settle(self, open_answers, state_file):
        """Keeps the ticket after the oldest answers whose rows have all been handed out."""
        for answer in sorted(open_answers):
            remaining, next_ticket = open_answers[answer]
            if remaining > 0:
                break
            del open_answers[answer]
            self._handed.pop(answer, None)
            self._ticket = next_ticket
            self._save(state_file, next_ticket)
